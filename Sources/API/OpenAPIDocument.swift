import EventStore
import HLS
import Schedule
import Wire

/// The OpenAPI 3.1 document of the HTTP API, served at `/openapi.json` and printed by `cueline openapi`.
/// The checked-in `openapi.json` at the top of the repository is this text (a test keeps them identical):
/// edit here, then run `cueline openapi > openapi.json`.
public enum OpenAPIDocument {
    public static let json = #"""
        {
          "openapi": "3.1.0",
          "info": {
            "title": "Cueline",
            "version": "1",
            "description": "The break schedule of live HLS channels. Playlists, asset lists, health and metrics are public. Commands and JSON reads need a bearer token from `cueline token create` (roles: operator, automation, viewer), unless the server runs with --unauthenticated-commands. Durations and offsets are decimal seconds written as strings (\"30.000\"); instants are ISO 8601 in UTC with milliseconds. Errors are {\"error\": message, \"field\": name} with the field that is wrong when there is one. Limits (422 naming the field beyond them): ids \#(Identifier.pattern); instants \#(Limits.earliestInstant) … \#(Limits.latestInstant), a break start at most 7 days ahead, at most \#(Limits.maximumFutureBreaks) breaks per channel that have not aired (409 beyond); durations and `in` 0…86400 s, a break at most 3600 s; reason and attribute values at most \#(Limits.textBytes) bytes, actor and Idempotency-Key at most \#(Limits.labelBytes), URIs at most \#(Limits.uriBytes), none with control characters (C0, DEL, C1)."
          },
          "servers": [{ "url": "http://127.0.0.1:8080" }],
          "components": {
            "securitySchemes": {
              "token": { "type": "http", "scheme": "bearer", "description": "cueline token create NAME --role operator|automation|viewer" }
            },
            "parameters": {
              "channel": { "name": "channel", "in": "path", "required": true, "schema": { "$ref": "#/components/schemas/Identifier" } },
              "idempotencyKey": { "name": "Idempotency-Key", "in": "header", "required": false, "description": "A retry with the same key returns the first answer (201, replayed: true) and is never applied twice; the same key with a different request is 409.", "schema": { "$ref": "#/components/schemas/Label" } },
              "ifMatch": { "name": "If-Match", "in": "header", "required": false, "description": "The channel version the command was decided against; 409 if the channel moved on.", "schema": { "type": "string" } }
            },
            "schemas": {
              "Error": {
                "type": "object", "required": ["error"],
                "properties": { "error": { "type": "string" }, "field": { "type": "string" } }
              },
              "Subscription": {
                "type": "object", "required": ["name", "url", "channels", "events", "created_at", "created_by"],
                "properties": { "name": { "type": "string" }, "url": { "type": "string" }, "channels": { "type": "array", "items": { "type": "string" } }, "events": { "type": "array", "items": { "type": "string" } }, "created_at": { "$ref": "#/components/schemas/Instant" }, "created_by": { "type": "string" } }
              },
              "Identifier": { "type": "string", "pattern": "\#(Identifier.pattern)", "description": "Channels, breaks, renditions, hooks: \#(Identifier.rule)." },
              "StoredIdentifier": { "type": "string", "pattern": "\#(Identifier.storedPattern)", "description": "A channel or break id in an answer, as it was created: an Identifier, or for a channel created before that rule an id that also starts with '_' or '-' (it is read and served, and takes no commands)." },
              "Text": { "type": "string", "maxLength": \#(Limits.textBytes), "pattern": "^[^\\u0000-\\u001F\\u007F-\\u009F]*$", "description": "No control characters (C0 including TAB and line breaks, DEL, C1); at most \#(Limits.textBytes) UTF-8 bytes." },
              "Label": { "type": "string", "maxLength": \#(Limits.labelBytes), "pattern": "^[^\\u0000-\\u001F\\u007F-\\u009F]*$", "description": "No control characters; at most \#(Limits.labelBytes) UTF-8 bytes." },
              "URI": { "type": "string", "format": "uri", "maxLength": \#(Limits.uriBytes), "pattern": "^https?://[!#-~]+$", "description": "Absolute http(s), printable ASCII without spaces or double quotes, at most \#(Limits.uriBytes) bytes." },
              "Seconds": { "type": "string", "pattern": "^-?[0-9]+(\\.[0-9]{1,9})?$", "examples": ["30.000"] },
              "Instant": { "type": "string", "format": "date-time", "description": "ISO 8601 with a time zone, between \#(Limits.earliestInstant) and \#(Limits.latestInstant).", "examples": ["2026-11-22T20:15:30.000Z"] },
              "Command": {
                "type": "object", "required": ["command"],
                "description": "place_break needs duration, exactly one of start or in, and exactly one of asset_uri, asset_list or pod (none when an ad server fills the break, its ad_server or the channel's; then asset_uri or pod is the fallback); on a clock channel its start moves to the next segment boundary unless align is exact (the answer's note says from where). set_playout_limit needs id and playout_limit. cancel_break needs id. cancel_current_event ends the break on air at the live edge; a break that started on the clock but that no published segment holds yet (the live edge has not reached it) is removed instead (BreakCancelled with kind cancel-current, and a note).",
                "properties": {
                  "command": { "type": "string", "enum": \#(Self.list(ScheduleCommand.Kind.api.map(\.rawValue))) },
                  "id": { "$ref": "#/components/schemas/Identifier" },
                  "start": { "$ref": "#/components/schemas/Instant", "description": "at most 7 days after the command arrives" },
                  "in": { "type": "number", "minimum": 0, "maximum": 86400, "description": "seconds from now" },
                  "duration": { "type": "number", "exclusiveMinimum": 0, "maximum": 3600 },
                  "asset_uri": { "$ref": "#/components/schemas/URI" },
                  "asset_list": { "$ref": "#/components/schemas/URI" },
                  "pod": { "type": "array", "maxItems": \#(Limits.maximumPodAssets), "items": { "type": "object", "required": ["uri", "duration"], "properties": { "uri": { "$ref": "#/components/schemas/URI" }, "duration": { "type": "number", "exclusiveMinimum": 0, "maximum": 3600 } } } },
                  "restrict": { "type": "array", "items": { "type": "string", "enum": \#(Self.list(DateRange.Restriction.allCases.map { $0.rawValue.lowercased() })) } },
                  "snap": { "type": "array", "items": { "type": "string", "enum": \#(Self.list(DateRange.Snap.allCases.map { $0.rawValue.lowercased() })) } },
                  "cue": { "type": "array", "items": { "type": "string", "enum": \#(Self.list(DateRange.Cue.allCases.map { $0.rawValue.lowercased() })) } },
                  "align": { "type": "string", "enum": \#(Self.list(PlaceBreak.StartAlignment.allCases.map(\.rawValue))), "default": "segment", "description": "segment: a start off a segment boundary moves to the next boundary, so hls.js plays every break the same way (it chooses between appending in place and a separate media source by where the start falls in a segment); exact: keep the start given. Relay channels always keep it." },
                  "chunked": { "type": "boolean", "default": true, "description": "true: an asset whose playlist the service can read is listed in chunks of at most 2 s from its own asset list, so an early return ends the ad within one chunk; false serves it whole (X-ASSET-URI). Either way the planned duration is checked against the media (corrected within 1 s, refused beyond)." },
                  "attributes": { "type": "object", "maxProperties": 32, "propertyNames": { "pattern": "^X-[A-Z0-9-]{1,62}$" }, "additionalProperties": { "$ref": "#/components/schemas/Text" }, "description": "X-… client attributes; values without double quotes" },
                  "playout_limit": { "type": "number", "minimum": 0, "maximum": 86400 },
                  "ad_server": { "type": "string", "maxLength": \#(Limits.uriBytes), "description": "URL template of the ad server (VAST 4.x/3.0, VMAP 1.0) that fills the break for each viewer, asked when a player requests the break's asset list; placeholders {break_id}, {channel}, {duration}, {start}, {primary_id} and {param.NAME} with NAME one of \#(AdServerTemplate.allowedParameters.joined(separator: ", ")); none before the path. Without it, the channel's ad server (if any) when the break is placed. Then asset_uri or pod, if given, is the fallback (else the channel's slate, else an empty list)." },
                  "skip_offset": { "type": "integer", "minimum": 0, "description": "X-SKIP-CONTROL-OFFSET: whole seconds into the break before players offer a skip button." },
                  "skip_duration": { "type": "integer", "exclusiveMinimum": 0, "description": "X-SKIP-CONTROL-DURATION: how long the button shows (default: until the end). Needs skip_offset." },
                  "skip_label": { "type": "string", "pattern": "^[A-Za-z_-]{1,64}$", "description": "X-SKIP-CONTROL-LABEL-ID: the key a player app looks its localized button label up by. Needs skip_offset." },
                  "timeline_occupies": { "type": "string", "enum": ["point", "range"], "description": "X-TIMELINE-OCCUPIES (players' default: point)." },
                  "timeline_style": { "type": "string", "enum": ["highlight", "primary"], "description": "X-TIMELINE-STYLE (players' default: highlight)." },
                  "content_may_vary": { "type": "boolean", "description": "X-CONTENT-MAY-VARY (players' default: yes)." },
                  "actor": { "$ref": "#/components/schemas/Label", "description": "Only without tokens; with a token the actor is the token's name." },
                  "reason": { "$ref": "#/components/schemas/Text" }
                }
              },
              "Event": {
                "type": "object",
                "properties": {
                  "position": { "type": "integer" }, "channel": { "$ref": "#/components/schemas/StoredIdentifier" }, "version": { "type": "integer" },
                  "type": { "type": "string", "enum": \#(Self.list(ScheduleEvent.typeNames)) },
                  "schema_version": { "type": "integer" }, "payload": { "type": "string", "description": "the event's JSON, as stored" },
                  "decided_at": { "$ref": "#/components/schemas/Instant" }, "actor": { "type": "string" },
                  "source": { "type": "string", "enum": \#(Self.list(CommandSource.allCases.map(\.rawValue))) }, "command_id": { "type": "string" },
                  "reason": { "type": "string" }, "hash": { "type": "string" }
                }
              },
              "CommandResult": {
                "type": "object",
                "properties": {
                  "channel": { "$ref": "#/components/schemas/StoredIdentifier" }, "version": { "type": "integer" },
                  "replayed": { "type": "boolean", "description": "true when this answers a retry of a command already applied" },
                  "events": { "type": "array", "items": { "$ref": "#/components/schemas/Event" } },
                  "note": { "type": "string", "description": "How the command was applied when the events alone do not say it: a start moved to a segment boundary (and from where), a break removed by cancel_current_event before its first segment was served." }
                }
              },
              "Ignored": {
                "type": "object", "description": "Nothing was written, and why (a repeated SCTE-35 cue, a payload no hook rule matches).",
                "properties": { "channel": { "$ref": "#/components/schemas/StoredIdentifier" }, "hook": { "type": "string" }, "ignored": { "type": "string" } }
              },
              "Break": {
                "type": "object",
                "properties": {
                  "id": { "$ref": "#/components/schemas/StoredIdentifier" },
                  "state": { "type": "string", "enum": \#(Self.list(BreakState.Phase.allCases.map(\.rawValue))) },
                  "start_date": { "$ref": "#/components/schemas/Instant" }, "planned_duration": { "$ref": "#/components/schemas/Seconds" },
                  "duration": { "$ref": "#/components/schemas/Seconds" }, "playout_limit": { "$ref": "#/components/schemas/Seconds" },
                  "resume_offset": { "$ref": "#/components/schemas/Seconds" }, "end_date": { "$ref": "#/components/schemas/Instant" },
                  "asset_uri": { "type": "string" }, "asset_list": { "type": "string" },
                  "pod": { "type": "array", "items": { "type": "object" } },
                  "restrictions": { "type": "array", "items": { "type": "string" } }, "snap": { "type": "array", "items": { "type": "string" } },
                  "cue": { "type": "array", "items": { "type": "string" } },
                  "user_attributes": { "type": "object", "additionalProperties": { "type": "string" } },
                  "ad_server": { "type": "string", "description": "The ad server template that decides each viewer's asset list." },
                  "skip_offset": { "$ref": "#/components/schemas/Seconds" }, "skip_duration": { "$ref": "#/components/schemas/Seconds" },
                  "skip_label": { "type": "string" },
                  "timeline_occupies": { "type": "string", "enum": ["POINT", "RANGE"] }, "timeline_style": { "type": "string", "enum": ["HIGHLIGHT", "PRIMARY"] },
                  "content_may_vary": { "type": "boolean" },
                  "placed_by": { "type": "string" }, "placed_at": { "$ref": "#/components/schemas/Instant" }, "placed_via": { "type": "string" },
                  "ended_early_by": { "type": "string" }, "ended_early_at": { "$ref": "#/components/schemas/Instant" },
                  "ended_early_how": { "type": "string", "enum": \#(Self.list(EarlyReturnKind.allCases.map(\.rawValue))) },
                  "cancelled_by": { "type": "string" }, "cancelled_at": { "$ref": "#/components/schemas/Instant" },
                  "cancelled_how": { "type": "string", "enum": \#(Self.list(BreakCancelKind.allCases.map(\.rawValue))), "description": "cancel-current: ended by cancel_current_event before any published segment held it, so removed" }
                }
              },
              "Schedule": {
                "type": "object",
                "properties": {
                  "channel": { "$ref": "#/components/schemas/StoredIdentifier" }, "version": { "type": "integer" }, "live_edge": { "$ref": "#/components/schemas/Instant" },
                  "breaks": { "type": "array", "description": "in order of start, then of id", "items": { "$ref": "#/components/schemas/Break" } },
                  "next": { "type": "string", "description": "present when more breaks follow in the window asked for: the `after` of the next page (the start and id of this page's last break)", "examples": ["2026-11-22T20:15:30.000Z,brk-42"] }
                }
              },
              "Channel": {
                "type": "object",
                "properties": {
                  "id": { "$ref": "#/components/schemas/StoredIdentifier" }, "segment_duration": { "$ref": "#/components/schemas/Seconds" }, "target_duration": { "type": "integer" },
                  "window_segments": { "type": "integer" }, "epoch": { "$ref": "#/components/schemas/Instant" },
                  "renditions": { "type": "array", "items": { "type": "string" } }, "source": { "type": "string", "enum": ["clock", "relay"] },
                  "markers": { "type": "string", "enum": ["interstitial", "scte35", "both"], "description": "What breaks are marked with; absent for a channel created before signalling." },
                  "segmentation_type": { "type": "string", "description": "The SCTE-35 segmentation type of a break's start, as 0x34." },
                  "ads": {
                    "type": "object", "description": "Ad settings (cueline channel create|update); absent for a channel that never had any.",
                    "properties": {
                      "ad_server": { "type": "string" }, "ad_timeout": { "$ref": "#/components/schemas/Seconds" },
                      "ad_concurrency": { "type": "integer" }, "slate": { "type": "string" },
                      "slate_duration": { "$ref": "#/components/schemas/Seconds" }, "preload": { "$ref": "#/components/schemas/Seconds" },
                      "ad_beacons": { "type": "string", "enum": ["client", "server"] },
                      "preroll_asset": { "type": "string", "description": "A VOD playlist a viewer who joins plays once before the programme (CUE=\"PRE,ONCE\")." },
                      "preroll_ad_server": { "type": "string", "description": "The ad server template deciding each joining viewer's preroll." },
                      "preroll_duration": { "$ref": "#/components/schemas/Seconds" }
                    }
                  }
                }
              }
            },
            "responses": {
              "Created": { "description": "Applied (or the original answer to a retry).", "content": { "application/json": { "schema": { "$ref": "#/components/schemas/CommandResult" } } } },
              "Unauthorized": { "description": "No token, a malformed, unknown or revoked token, or (hooks) a bad signature or a timestamp outside the window.", "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Error" } } } },
              "Forbidden": { "description": "The token's role, channels or command types do not allow this.", "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Error" } } } },
              "NotFound": { "description": "Unknown channel, break or hook.", "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Error" } } } },
              "Conflict": { "description": "The channel changed first (If-Match), a race was lost (the break already ended or was cancelled), the Idempotency-Key was used for another request, or the channel already holds \#(Limits.maximumFutureBreaks) breaks that have not aired (its limit; place_break only).", "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Error" } } } },
              "Invalid": { "description": "A field is missing or wrong; field names it.", "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Error" } } } },
              "Unavailable": { "description": "The event log is unreachable; nothing was written. Retry with the same Idempotency-Key.", "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Error" } } } },
              "AuditBusy": { "description": "The audit read was not started (replay, as-run, JSON event and refusal pages, schedule pages of more than \#(SchedulePage.defaultLimit) breaks: 1 or 2 run at once per instance, the others wait in line fairly per caller, its token or else its client address, then per channel): its caller already has 2 waiting, or 16 wait in all and no caller holds more than its share, or another caller's first read took its place; or the event log is unreachable. Retry after Retry-After seconds.", "headers": { "Retry-After": { "schema": { "type": "integer" } } }, "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Error" } } } }
            }
          },
          "paths": {
            "/channels": {
              "get": { "summary": "The channels the token may read", "security": [{ "token": [] }],
                "responses": { "200": { "description": "Channels", "content": { "application/json": { "schema": { "type": "array", "items": { "$ref": "#/components/schemas/Channel" } } } } }, "401": { "$ref": "#/components/responses/Unauthorized" } } }
            },
            "/channels/{channel}/master.m3u8": {
              "get": { "summary": "Multivariant playlist (public)", "parameters": [{ "$ref": "#/components/parameters/channel" }],
                "responses": { "200": { "description": "Playlist", "content": { "application/vnd.apple.mpegurl": {} } }, "404": { "$ref": "#/components/responses/NotFound" } } }
            },
            "/channels/{channel}/{rendition}.m3u8": {
              "get": { "summary": "Live media playlist with HLS Interstitials (public)", "description": "X-Cueline-Tick gives the instant these bytes were rendered for; GET …/replay?at= that instant returns the same bytes.",
                "parameters": [{ "$ref": "#/components/parameters/channel" }, { "name": "rendition", "in": "path", "required": true, "schema": { "$ref": "#/components/schemas/Identifier" } },
                  { "name": "_HLS_msn", "in": "query", "description": "LL-HLS blocking reload (channels with parts): answer once this segment (or with _HLS_part, this part of it) exists", "schema": { "type": "string", "pattern": "^[0-9]{1,18}$" } },
                  { "name": "_HLS_part", "in": "query", "description": "with _HLS_msn: the part index", "schema": { "type": "string", "pattern": "^[0-9]{1,6}$" } },
                  { "name": "_HLS_skip", "in": "query", "description": "LL-HLS delta update: YES skips older segments, v2 also date ranges of ended breaks", "schema": { "type": "string", "enum": ["YES", "v2"] } }],
                "responses": { "200": { "description": "Playlist", "headers": { "X-Cueline-Tick": { "schema": { "$ref": "#/components/schemas/Instant" } } }, "content": { "application/vnd.apple.mpegurl": {} } },
                  "400": { "description": "A malformed delivery directive, or _HLS_msn more than two segments after the last one", "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Error" } } } },
                  "404": { "$ref": "#/components/responses/NotFound" }, "503": { "description": "The channel has not started yet, a relay has no upstream playlist, or a blocked request's part did not appear within 3 target durations." } } }
            },
            "/channels/{channel}/prerolls/{id}/assets.json": {
              "get": { "summary": "HLS asset list of a channel's preroll decided for this viewer by its preroll ad server (public)", "description": "The preroll range the playlists publish now (CUE=\"PRE,ONCE\", ID preroll.<n>.<digest>), or the one before it: the ad server asked as for a break's list, the creatives fitted to the preroll's length; an empty list (no preroll) when its answer is slow, failing, empty or malformed. Per viewer: Cache-Control private, no-store.", "parameters": [{ "$ref": "#/components/parameters/channel" }, { "name": "id", "in": "path", "required": true, "schema": { "type": "string" } }, { "name": "_HLS_primary_id", "in": "query", "description": "the viewer's playback session: {primary_id} in the ad server template", "schema": { "type": "string" } }],
                "responses": { "200": { "description": "{\"ASSETS\": [{\"URI\", \"DURATION\"}]}", "content": { "application/json": {} } }, "404": { "$ref": "#/components/responses/NotFound" } } }
            },
            "/channels/{channel}/breaks/{id}/assets.json": {
              "get": { "summary": "HLS asset list of a pod, of a measured asset's chunks, or decided for this viewer by the break's ad server (public)", "description": "A break with an ad server: the ad server is asked for each request (its answer within the channel's ad_timeout, wrappers followed), the HLS creatives fitted to the break's duration with SKIP-CONTROL and each ad's tracking as X-AD-CREATIVE-SIGNALING (SVTA2053-2); a slow, failing, empty or malformed answer gets the fallback (the break's assets, else the channel's slate, else an empty list). Such a list is per viewer: Cache-Control private, no-store. Every other list is the same for all players: no-cache.", "parameters": [{ "$ref": "#/components/parameters/channel" }, { "name": "id", "in": "path", "required": true, "schema": { "$ref": "#/components/schemas/Identifier" } }, { "name": "_HLS_primary_id", "in": "query", "description": "the viewer's playback session: {primary_id} in the ad server template", "schema": { "type": "string" } }, { "name": "_HLS_start_offset", "in": "query", "description": "accepted and ignored: the list is laid out from the break's start (hls.js seeks into it itself)", "schema": { "type": "string" } }],
                "responses": { "200": { "description": "{\"ASSETS\": [{\"URI\", \"DURATION\"}]}, with SKIP-CONTROL and X-AD-CREATIVE-SIGNALING when decided", "content": { "application/json": {} } }, "404": { "$ref": "#/components/responses/NotFound" } } }
            },
            "/channels/{channel}/breaks/{id}/chunks/{file}": {
              "get": { "summary": "One chunk of an asset measured at placement: a VOD playlist of the asset's own segments in the chunk's span (public)", "parameters": [{ "$ref": "#/components/parameters/channel" }, { "name": "id", "in": "path", "required": true, "schema": { "$ref": "#/components/schemas/Identifier" } }, { "name": "file", "in": "path", "required": true, "description": "<asset>-<chunk>.m3u8, or <asset>-<chunk>-<variant>.m3u8 for a variant of a multivariant asset", "schema": { "type": "string", "pattern": "^[0-9]{1,6}-[0-9]{1,6}(-[0-9]{1,6})?\\.m3u8$" } }],
                "responses": { "200": { "description": "VOD playlist", "content": { "application/vnd.apple.mpegurl": {} } }, "404": { "$ref": "#/components/responses/NotFound" }, "502": { "description": "the asset's playlist cannot be read now" } } }
            },
            "/channels/{channel}/schedule": {
              "get": { "summary": "The breaks the instance holds (from about 10 minutes back to every break still to air) with their state and the fields a client-side scheduler needs, a page at a time",
                "description": "Breaks planned to start in [from, to), in order of start then id, after the cursor `after`: at most `limit` and at most \#(SchedulePage.maximumBytes / 1024 / 1024) MiB of breaks, so an answer is at most \#(SchedulePage.maximumBytes / 1024 / 1024) MiB and a few hundred bytes. `next` is present when more follow: the `after` of the next page. A page of up to \#(SchedulePage.defaultLimit) breaks is answered at once; a longer one is an audit read (503 with Retry-After when it cannot have a turn). A channel holds at most \#(Limits.maximumFutureBreaks) breaks that have not aired.",
                "security": [{ "token": [] }],
                "parameters": [{ "$ref": "#/components/parameters/channel" }, { "name": "from", "in": "query", "schema": { "$ref": "#/components/schemas/Instant" } }, { "name": "to", "in": "query", "description": "not before from", "schema": { "$ref": "#/components/schemas/Instant" } },
                  { "name": "after", "in": "query", "description": "the `next` of the page before", "schema": { "type": "string" } }, { "name": "limit", "in": "query", "description": "\#(SchedulePage.defaultLimit) by default; out of range is 422", "schema": { "type": "integer", "minimum": 1, "maximum": \#(SchedulePage.maximumLimit) } }],
                "responses": { "200": { "description": "A page of the schedule", "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Schedule" } } } }, "401": { "$ref": "#/components/responses/Unauthorized" }, "403": { "$ref": "#/components/responses/Forbidden" }, "404": { "$ref": "#/components/responses/NotFound" }, "422": { "$ref": "#/components/responses/Invalid" }, "503": { "$ref": "#/components/responses/AuditBusy" } } }
            },
            "/channels/{channel}/events": {
              "get": { "summary": "The channel's event log: a page by version, or a live Server-Sent Events stream", "description": "With Accept: text/event-stream (or ?stream=1): every event after `after` or Last-Event-ID, then each new one; `id` is the stream version, `event` the type, `data` the event JSON. A stream ends after 10 minutes; EventSource reconnects. Streams are limited per token (429) and per instance (503), both with Retry-After (serve --max-streams-per-token, --max-streams). A JSON page holds at most `limit` events and at most 1 MiB (a single larger event comes alone); `next` is the last version in it, the `after` of the next page. JSON pages are audit reads: 503 with Retry-After when the instance runs its most.",
                "security": [{ "token": [] }],
                "parameters": [{ "$ref": "#/components/parameters/channel" }, { "name": "after", "in": "query", "schema": { "type": "integer", "minimum": 0, "maximum": 9223372036854775807 } }, { "name": "limit", "in": "query", "description": "100 by default; out of range, or not a whole number, is 422", "schema": { "type": "integer", "minimum": 1, "maximum": 1000 } }, { "name": "Last-Event-ID", "in": "header", "schema": { "type": "integer", "minimum": 0 } }],
                "responses": { "200": { "description": "A page, or the stream", "content": {
                    "application/json": { "schema": { "type": "object", "properties": { "channel": { "$ref": "#/components/schemas/StoredIdentifier" }, "events": { "type": "array", "items": { "$ref": "#/components/schemas/Event" } }, "next": { "type": "integer" } } } },
                    "text/event-stream": { "schema": { "type": "string" } } } },
                  "401": { "$ref": "#/components/responses/Unauthorized" }, "403": { "$ref": "#/components/responses/Forbidden" }, "404": { "$ref": "#/components/responses/NotFound" }, "422": { "$ref": "#/components/responses/Invalid" },
                  "429": { "description": "The token already has its most event streams open; retry after Retry-After seconds", "headers": { "Retry-After": { "schema": { "type": "integer" } } } },
                  "503": { "description": "The instance serves its most event streams or audit reads (or the log is unreachable); retry after Retry-After seconds", "headers": { "Retry-After": { "schema": { "type": "integer" } } } } } }
            },
            "/channels/{channel}/refusals": {
              "get": { "summary": "The channel's refused commands (who, when, which door, why not), a page at a time in the order recorded", "description": "Commands the schedule refused (a break that does not exist or already ended…), kept for the audit trail apart from the log. `next` is the cursor of the last refusal in the page, the `after` of the next page; absent when the page is empty. With `break`, only refusals whose request named that break.",
                "security": [{ "token": [] }],
                "parameters": [{ "$ref": "#/components/parameters/channel" }, { "name": "after", "in": "query", "schema": { "type": "integer", "minimum": 0, "maximum": 9223372036854775807 } }, { "name": "limit", "in": "query", "description": "100 by default", "schema": { "type": "integer", "minimum": 1, "maximum": 1000 } }, { "name": "break", "in": "query", "schema": { "$ref": "#/components/schemas/Identifier" } }],
                "responses": { "200": { "description": "A page", "content": { "application/json": { "schema": { "type": "object", "required": ["channel", "refusals"], "properties": { "channel": { "$ref": "#/components/schemas/StoredIdentifier" }, "break_id": { "$ref": "#/components/schemas/Identifier" }, "next": { "type": "integer" },
                    "refusals": { "type": "array", "items": { "type": "object", "required": ["command", "command_id", "request", "actor", "source", "reason", "decided_at"], "properties": { "command": { "type": "string" }, "command_id": { "type": "string" }, "break_id": { "type": "string" }, "request": { "type": "string", "description": "the canonical request, JSON" }, "actor": { "type": "string" }, "source": { "type": "string" }, "reason": { "type": "string" }, "decided_at": { "$ref": "#/components/schemas/Instant" } } } } } } } } },
                  "401": { "$ref": "#/components/responses/Unauthorized" }, "403": { "$ref": "#/components/responses/Forbidden" }, "404": { "$ref": "#/components/responses/NotFound" }, "422": { "$ref": "#/components/responses/Invalid" }, "503": { "$ref": "#/components/responses/Unavailable" } } }
            },
            "/channels/{channel}/commands": {
              "post": { "summary": "Append a schedule command", "security": [{ "token": [] }],
                "parameters": [{ "$ref": "#/components/parameters/channel" }, { "$ref": "#/components/parameters/idempotencyKey" }, { "$ref": "#/components/parameters/ifMatch" }],
                "requestBody": { "required": true, "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Command" } } } },
                "responses": { "201": { "$ref": "#/components/responses/Created" }, "401": { "$ref": "#/components/responses/Unauthorized" }, "403": { "$ref": "#/components/responses/Forbidden" }, "404": { "$ref": "#/components/responses/NotFound" }, "409": { "$ref": "#/components/responses/Conflict" }, "422": { "$ref": "#/components/responses/Invalid" }, "503": { "$ref": "#/components/responses/Unavailable" } } }
            },
            "/channels/{channel}/scte35": {
              "post": { "summary": "Apply an SCTE-35 splice_info_section", "description": "splice_insert or time_signal with segmentation descriptors, CRC checked. Out places break scte35-<event id> at arrival, moved to the next segment boundary unless align is exact (duration from the section, else `duration`), carrying the section as SCTE35-OUT; in/end returns from it (SCTE35-IN); a cancel cancels it (or ends it when on air). A repeated cue answers 200 ignored. The command type scoped on automation tokens is place_break, cancel_current_event or cancel_break.",
                "security": [{ "token": [] }],
                "parameters": [{ "$ref": "#/components/parameters/channel" }, { "$ref": "#/components/parameters/idempotencyKey" }],
                "requestBody": { "required": true, "content": { "application/json": { "schema": { "type": "object", "required": ["section"], "properties": {
                  "section": { "type": "string", "description": "base64 or hex (0x optional)" }, "asset_uri": { "$ref": "#/components/schemas/URI" }, "asset_list": { "$ref": "#/components/schemas/URI" },
                  "duration": { "type": "number", "exclusiveMinimum": 0, "maximum": 3600, "description": "seconds, for an out that gives none" },
                  "align": { "type": "string", "enum": \#(Self.list(PlaceBreak.StartAlignment.allCases.map(\.rawValue))), "default": "segment", "description": "as for place_break: the splice point (the arrival) moves to the next segment boundary unless exact" }, "reason": { "$ref": "#/components/schemas/Text" } } } } } },
                "responses": { "200": { "description": "Nothing to do", "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Ignored" } } } }, "201": { "$ref": "#/components/responses/Created" }, "401": { "$ref": "#/components/responses/Unauthorized" }, "403": { "$ref": "#/components/responses/Forbidden" }, "404": { "$ref": "#/components/responses/NotFound" }, "409": { "$ref": "#/components/responses/Conflict" }, "422": { "$ref": "#/components/responses/Invalid" }, "503": { "$ref": "#/components/responses/Unavailable" } } }
            },
            "/hooks/{name}": {
              "post": { "summary": "A signed feed payload, mapped to a command by the hooks file", "description": "X-Cueline-Signature is sha256=<hex HMAC-SHA256 of \"<X-Cueline-Timestamp>.<body>\"> under the hook's secret; the timestamp must be within the hook's window. The same delivery (or Idempotency-Key) is one command. The actor is hook:<name>.",
                "parameters": [{ "name": "name", "in": "path", "required": true, "schema": { "$ref": "#/components/schemas/Identifier" } }, { "name": "X-Cueline-Timestamp", "in": "header", "required": true, "schema": { "type": "integer", "description": "Unix seconds" } }, { "name": "X-Cueline-Signature", "in": "header", "required": true, "schema": { "type": "string" } }, { "$ref": "#/components/parameters/idempotencyKey" }],
                "requestBody": { "required": true, "content": { "application/json": { "schema": { "type": "object" } } } },
                "responses": { "200": { "description": "No rule matches", "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Ignored" } } } }, "201": { "$ref": "#/components/responses/Created" }, "401": { "$ref": "#/components/responses/Unauthorized" }, "404": { "$ref": "#/components/responses/NotFound" }, "409": { "$ref": "#/components/responses/Conflict" }, "422": { "$ref": "#/components/responses/Invalid" }, "503": { "$ref": "#/components/responses/Unavailable" } } }
            },
            "/channels/{channel}/replay": {
              "get": { "summary": "The exact playlist served at an instant, rebuilt from the log", "security": [{ "token": [] }],
                "parameters": [{ "$ref": "#/components/parameters/channel" }, { "name": "at", "in": "query", "required": true, "schema": { "$ref": "#/components/schemas/Instant" } }, { "name": "rendition", "in": "query", "schema": { "type": "string" } }, { "name": "multivariant", "in": "query", "schema": { "type": "string" } }, { "name": "skip", "in": "query", "description": "YES or v2: the delta update served to _HLS_skip at that instant", "schema": { "type": "string", "enum": ["YES", "v2"] } }],
                "responses": { "200": { "description": "Playlist", "content": { "application/vnd.apple.mpegurl": {} } }, "401": { "$ref": "#/components/responses/Unauthorized" }, "403": { "$ref": "#/components/responses/Forbidden" }, "404": { "$ref": "#/components/responses/NotFound" }, "422": { "$ref": "#/components/responses/Invalid" }, "503": { "$ref": "#/components/responses/AuditBusy" } } }
            },
            "/channels/{channel}/as-run": {
              "get": { "summary": "What aired: every break with planned and actual times, who and how", "security": [{ "token": [] }],
                "parameters": [{ "$ref": "#/components/parameters/channel" }, { "name": "from", "in": "query", "schema": { "$ref": "#/components/schemas/Instant" } }, { "name": "to", "in": "query", "schema": { "$ref": "#/components/schemas/Instant" } }, { "name": "format", "in": "query", "schema": { "type": "string", "enum": ["csv"] } }],
                "responses": { "200": { "description": "JSON report, or CSV", "content": { "application/json": {}, "text/csv": {} } }, "401": { "$ref": "#/components/responses/Unauthorized" }, "403": { "$ref": "#/components/responses/Forbidden" }, "404": { "$ref": "#/components/responses/NotFound" }, "422": { "$ref": "#/components/responses/Invalid" }, "503": { "$ref": "#/components/responses/AuditBusy" } } }
            },
            "/subscriptions": {
              "get": { "summary": "Notification subscriptions, without their secrets (admins: an operator token for every channel)", "security": [{ "token": [] }],
                "responses": { "200": { "description": "The subscriptions by name", "content": { "application/json": { "schema": { "type": "object", "required": ["subscriptions"], "properties": { "subscriptions": { "type": "array", "items": { "$ref": "#/components/schemas/Subscription" } } } } } } }, "401": { "$ref": "#/components/responses/Unauthorized" }, "403": { "$ref": "#/components/responses/Forbidden" }, "503": { "$ref": "#/components/responses/Unavailable" } } },
              "post": { "summary": "Create a subscription to signed notifications; the answer holds its signing secret, shown only here", "description": "Deliveries are JSON POSTs to url with X-Cueline-Timestamp, X-Cueline-Signature (sha256=<hex HMAC-SHA256 of \"<timestamp>.<body>\"> under the secret) and X-Cueline-Delivery (the same at every retry); payloads in docs/notifications.md.", "security": [{ "token": [] }],
                "requestBody": { "required": true, "content": { "application/json": { "schema": { "type": "object", "required": ["name", "url"], "additionalProperties": false, "properties": {
                  "name": { "type": "string", "pattern": "^[a-z0-9][a-z0-9._-]{0,63}$" },
                  "url": { "$ref": "#/components/schemas/URI" },
                  "channels": { "type": "array", "items": { "$ref": "#/components/schemas/Identifier" }, "description": "empty or absent: every channel" },
                  "events": { "type": "array", "items": { "type": "string", "enum": \#(Self.list(NotificationKind.allCases.map(\.rawValue))) }, "description": "empty or absent: every kind" } } } } } },
                "responses": { "201": { "description": "Created", "content": { "application/json": { "schema": { "type": "object", "required": ["subscription", "secret"], "properties": { "subscription": { "$ref": "#/components/schemas/Subscription" }, "secret": { "type": "string" } } } } } }, "401": { "$ref": "#/components/responses/Unauthorized" }, "403": { "$ref": "#/components/responses/Forbidden" }, "409": { "$ref": "#/components/responses/Conflict" }, "422": { "$ref": "#/components/responses/Invalid" }, "503": { "$ref": "#/components/responses/Unavailable" } } }
            },
            "/subscriptions/{name}": {
              "delete": { "summary": "Delete a subscription and its cursors; deliveries to it stop within seconds", "security": [{ "token": [] }],
                "parameters": [{ "name": "name", "in": "path", "required": true, "schema": { "type": "string" } }],
                "responses": { "204": { "description": "Deleted" }, "401": { "$ref": "#/components/responses/Unauthorized" }, "403": { "$ref": "#/components/responses/Forbidden" }, "404": { "$ref": "#/components/responses/NotFound" }, "503": { "$ref": "#/components/responses/Unavailable" } } }
            },
            "/healthz": { "get": { "summary": "The process is up (public)", "responses": { "200": { "description": "ok" } } } },
            "/readyz": { "get": { "summary": "The log has been read and the database answers (public)", "responses": { "200": { "description": "ready" }, "503": { "$ref": "#/components/responses/Unavailable" } } } },
            "/metrics": { "get": { "summary": "Prometheus metrics (public)", "responses": { "200": { "description": "text exposition", "content": { "text/plain": {} } } } } },
            "/openapi.json": { "get": { "summary": "This document (public)", "responses": { "200": { "description": "OpenAPI 3.1", "content": { "application/json": {} } } } } }
          }
        }
        """#

    /// Values as a JSON array of strings, for the enums taken from the types that define them.
    private static func list(_ values: [String]) -> String {
        "[" + values.map { "\"\($0)\"" }.joined(separator: ", ") + "]"
    }
}
