// The player pane's frame: hls.js plays one channel's multivariant playlist and tells the console what is on air.
// The console loads it in a sandboxed frame (an opaque origin): it cannot read the console's session storage, so the
// token is out of its reach, and only this frame may fetch from other origins (the ad servers of interstitials, a
// CDN's segments); the console's own pages reach their server alone (ConsoleController's two policies).
const say = (text) => parent.postMessage({ cuelinePlayer: text }, '*');
const channel = decodeURIComponent(location.hash.slice(1));

async function play() {
  let Hls;
  try {
    ({ Hls } = await import('/console/vendor/hls.mjs'));
  } catch {
    say('none');
    return;
  }
  if (!channel || !Hls.isSupported()) {
    say('This browser cannot play HLS with hls.js.');
    return;
  }
  const video = document.getElementById('video');
  const hls = new Hls({ liveSyncDurationCount: 3 });
  hls.on(Hls.Events.INTERSTITIAL_STARTED, (_, d) => say(`Interstitial ${d.event.identifier} on air`));
  hls.on(Hls.Events.INTERSTITIAL_ENDED, (_, d) => say(`Interstitial ${d.event.identifier} ended; program`));
  hls.on(Hls.Events.MANIFEST_PARSED, () => { say('Program'); video.play().catch(() => {}); });
  hls.on(Hls.Events.ERROR, (_, d) => { if (d.fatal) say(`Player error: ${d.details}`); });
  hls.loadSource(`/channels/${encodeURIComponent(channel)}/master.m3u8`);
  hls.attachMedia(video);
}

play();
