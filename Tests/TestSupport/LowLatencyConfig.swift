import Schedule

extension ChannelConfig {
    /// This channel as the LL-HLS tests run it: 1 s segments of four 0.25 s parts, a window of 10 segments, each
    /// rendition's parts at `https://cdn.example/<rendition>/seg{n}.{p}.m4s`.
    public var lowLatencyForTests: ChannelConfig {
        var config = self
        config.segmentDurationMilliseconds = 1000
        config.windowSegments = 10
        config.partDurationMilliseconds = 250
        for index in config.renditions.indices {
            config.renditions[index].partURITemplate =
                "https://cdn.example/\(config.renditions[index].name)/seg{n}.{p}.m4s"
        }
        return config
    }
}
