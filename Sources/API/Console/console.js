// The Cueline operator console: overview, channel timeline, commands, live updates, player pane.
import { session, getJSON, getSchedule, getScheduleWithDate, sendCommand, APIError, EventStream } from '/console/api.js';
import { ZOOMS, renderTimeline, clock, seconds, breakFields } from '/console/timeline.js';
// Every text from the server (ids, actors, reasons, error and refusal texts, notes) reaches the page through
// printable(): control, bidi and invisible characters shown as `\u{202E}`, as the CLI prints them.
import { printable } from '/console/text.js';

const $ = (id) => document.getElementById(id);
const app = {
  who: null, // {name, role, open}
  channels: [],
  view: null, // 'overview' | 'channel'
  channel: null, // the channel shown
  config: null, // its ChannelView
  schedule: null, // the schedule on screen: its version is what commands send as If-Match
  asrun: [],
  stream: null,
  poll: null,
  zoom: 0,
  selected: null,
  player: null,
  refreshTimer: null,
  detailTicket: 0, // the latest break detail asked for: older answers are dropped
  log: null, // the channel's log as read so far (readLog)
  refusals: null, // the refused attempts of the break in the detail, and when they were read
  asrunStates: null, // what the as-run was last read for
  asrunAt: 0,
  generation: 0, // bumped by every switch of view: work begun for an earlier view is dropped when it resumes
  overviewBusy: false,
};
/// At most this many channels' schedules are read per overview round (one request each, every 2 s).
const OVERVIEW_LIVE_ROWS = 50;

// What the browser tests read (scripts/browser/console_tests.py), in the page's high-resolution wall clock: when this
// console's last command was acknowledged (and the version it made), when the event stream first delivered each
// version, when each break was first shown in each state, and how many event streams the console holds open.
const probe = { acked: null, streamed: {}, shown: {}, openStreams: 0 };
window.__cueline = probe;
const wallNow = () => performance.timeOrigin + performance.now();
const commandsSection = $('commands');
const commandsHome = commandsSection.parentNode;
const commandsNext = commandsSection.nextSibling;

function isOperator() {
  return app.who && (app.who.open || app.who.role === 'operator' || app.who.role === 'automation');
}

function show(section) {
  for (const id of ['sign-in', 'overview', 'channel']) $(id).hidden = id !== section;
}

function setLink(state, text) {
  const node = $('link-state');
  node.dataset.state = state;
  node.textContent = printable(text);
}

// ---- sign-in ---------------------------------------------------------------------------------------------------

async function start() {
  try {
    app.who = await getJSON('/console/session');
  } catch (error) {
    app.who = null;
    if (error instanceof APIError && error.status === 401) {
      const had = session.token;
      session.token = null;
      showSignIn(had ? 'The token is unknown or revoked; sign in again.' : '');
      return;
    }
    showSignIn(`Cannot reach the server: ${error.message}`);
    return;
  }
  $('who').textContent = app.who.open ? 'open mode (no tokens)' : printable(`${app.who.name} · ${app.who.role}`);
  $('sign-out').hidden = app.who.open;
  if (isOperator()) {
    if (!commandsSection.isConnected) commandsHome.insertBefore(commandsSection, commandsNext);
    commandsSection.hidden = false;
    $('viewer-note').hidden = true;
  } else {
    commandsSection.remove(); // a viewer gets no command controls at all, not just hidden ones
    $('viewer-note').hidden = false;
  }
  route();
}

function showSignIn(message) {
  stopChannel();
  stopOverview();
  show('sign-in');
  setLink('off', 'not connected');
  $('who').textContent = '';
  $('sign-out').hidden = true;
  $('sign-in-error').textContent = printable(message || '');
  $('token').focus();
}

$('sign-in-form').addEventListener('submit', async (event) => {
  event.preventDefault();
  const token = $('token').value.trim();
  session.token = token;
  try {
    await getJSON('/console/session');
  } catch (error) {
    session.token = null;
    $('sign-in-error').textContent = printable(error.status === 401 ? `Refused: ${error.message}` : error.message);
    return;
  }
  $('token').value = '';
  await start();
});

$('sign-out').addEventListener('click', () => {
  session.token = null;
  app.who = null;
  location.hash = '#/';
  showSignIn('Signed out.');
});

// ---- routing -----------------------------------------------------------------------------------------------------

function route() {
  if (!app.who) return;
  const match = /^#\/channel\/([A-Za-z0-9._-]+)$/.exec(location.hash);
  if (match) openChannel(match[1]); else openOverview();
}
window.addEventListener('hashchange', route);
$('nav-overview').addEventListener('click', () => { location.hash = '#/'; });

// ---- overview ----------------------------------------------------------------------------------------------------

function stopOverview() {
  if (app.view === 'overview' && app.poll) clearInterval(app.poll);
  if (app.view === 'overview') app.poll = null;
}

async function openOverview() {
  stopChannel();
  const generation = ++app.generation;
  app.view = 'overview';
  show('overview');
  document.title = 'Cueline console';
  await refreshOverview();
  if (generation === app.generation && !app.poll) app.poll = setInterval(refreshOverview, 2000);
}

/// One round: the channel list, then the schedules of the first OVERVIEW_LIVE_ROWS channels (the others are listed
/// without them). A round never starts while the last one is still out, nor while the tab is hidden.
async function refreshOverview() {
  if (app.overviewBusy || document.visibilityState === 'hidden') return;
  app.overviewBusy = true;
  try {
    await overviewRound();
  } finally {
    app.overviewBusy = false;
  }
}

document.addEventListener('visibilitychange', () => {
  if (app.view === 'overview' && document.visibilityState === 'visible') refreshOverview();
});

async function overviewRound() {
  const generation = app.generation;
  let channels;
  try {
    channels = await getJSON('/channels');
    setLink('live', 'connected');
  } catch (error) {
    setLink('stale', `stale: ${error.message}`);
    return;
  }
  app.channels = channels;
  const rows = await Promise.all(channels.map(async (c, index) => {
    if (index >= OVERVIEW_LIVE_ROWS) return { c, error: new Error(`not followed here (the first ${OVERVIEW_LIVE_ROWS} channels are); open the channel`) };
    try {
      const { body, date } = await getScheduleWithDate(c.id);
      return { c, schedule: body, serverDate: date };
    } catch (error) {
      return { c, error };
    }
  }));
  if (generation !== app.generation) return;
  const body = $('channel-rows');
  // The rows are rebuilt: a keyboard user's focus goes back to the same channel's link.
  const focused = document.activeElement && body.contains(document.activeElement)
    ? document.activeElement.closest('tr')?.dataset.channel : undefined;
  body.replaceChildren(...rows.map(({ c, schedule, serverDate, error }) => overviewRow(c, schedule, serverDate, error)));
  if (!rows.length) {
    const tr = document.createElement('tr');
    const td = document.createElement('td');
    td.colSpan = 5;
    td.textContent = 'No channels yet (cueline channel create).';
    tr.append(td);
    body.append(tr);
  }
  if (focused) body.querySelector(`tr[data-channel="${CSS.escape(focused)}"] a`)?.focus();
}

function cell(text) {
  const td = document.createElement('td');
  if (text instanceof Node) td.append(text); else td.textContent = printable(text);
  return td;
}

function overviewRow(c, schedule, serverDate, error) {
  const tr = document.createElement('tr');
  tr.dataset.channel = c.id;
  const link = document.createElement('a');
  link.href = `#/channel/${c.id}`;
  link.textContent = printable(c.id);
  tr.append(cell(link));
  tr.append(cell(`${c.source || '?'} · ${c.segment_duration} s segments, ${c.renditions.length} renditions`));
  if (error) {
    tr.append(cell(error.message.startsWith('not followed') ? error.message : `unreadable: ${error.message}`), cell('—'), cell('—'));
    return tr;
  }
  const edge = Date.parse(schedule.live_edge);
  // Healthy: the live edge is within two segments (and the Date header's second) of the server's clock.
  const lag = (serverDate - edge) / 1000;
  const healthy = Number.isFinite(lag) && lag <= 2 * Number(c.segment_duration) + 1;
  const health = document.createElement('span');
  health.className = healthy ? 'healthy' : 'unhealthy';
  health.textContent = printable(`${healthy ? 'healthy' : 'behind'} · live edge ${clock(edge)}${Number.isFinite(lag) ? ` (${seconds(Math.max(0, lag))} s behind the server clock)` : ''} · log v${schedule.version}`);
  tr.dataset.health = healthy ? 'healthy' : 'behind';
  tr.append(cell(health));
  const next = schedule.breaks.filter((b) => b.state === 'scheduled').sort((a, b) => a.start_date.localeCompare(b.start_date))[0];
  tr.append(cell(next ? `${next.id} in ${Math.max(0, Math.round((Date.parse(next.start_date) - edge) / 1000))} s` : 'none'));
  const air = schedule.breaks.find((b) => b.state === 'on-air');
  if (air) {
    const played = (edge - Date.parse(air.start_date)) / 1000;
    const wrap = document.createElement('span');
    const bar = document.createElement('progress');
    bar.max = Number(air.duration);
    bar.value = Math.max(0, played);
    bar.setAttribute('aria-label', printable(`${air.id} progress`));
    wrap.append(printable(`${air.id} ${seconds(played)} / ${seconds(air.duration)} s `), bar);
    tr.append(cell(wrap));
  } else {
    tr.append(cell('—'));
  }
  return tr;
}

// ---- channel view ----------------------------------------------------------------------------------------------

function stopChannel() {
  if (app.stream) {
    app.stream.close();
    probe.openStreams -= 1;
  }
  app.stream = null;
  clearTimeout(app.refreshTimer);
  if (app.poll) clearInterval(app.poll);
  app.poll = null;
  stopPlayer();
}

async function openChannel(id) {
  stopChannel();
  // A switch while this one waits for the server (another channel, the overview) makes it stop there: it opens
  // no stream and no timer for a view that is gone.
  const generation = ++app.generation;
  app.view = 'channel';
  app.channel = id;
  app.schedule = null;
  app.asrun = [];
  app.asrunStates = null;
  app.selected = null;
  show('channel');
  $('channel-title').textContent = printable(`Channel ${id}`);
  document.title = printable(`${id} · Cueline console`);
  $('break-detail').hidden = true;
  if (commandsSection.isConnected) $('command-result').textContent = '';
  try {
    const channels = await getJSON('/channels');
    if (generation !== app.generation) return;
    app.config = channels.find((c) => c.id === id);
    if (!app.config) throw new Error(`no channel ${id} for this token`);
    await refreshChannel();
  } catch (error) {
    if (generation === app.generation) $('channel-facts').textContent = printable(`Cannot read channel ${id}: ${error.message}`);
    return;
  }
  if (generation !== app.generation || !app.schedule) return;
  // Live: the log's events after the version on screen; each one refreshes the schedule. The schedule is also
  // read once a segment, which is when the live edge moves.
  probe.openStreams += 1;
  app.stream = new EventStream(id, app.schedule.version, {
    onEvent: (event) => {
      if (event.id !== null && !(event.id in probe.streamed)) probe.streamed[event.id] = wallNow();
      scheduleRefresh();
    },
    onState: (state) => {
      const text = {
        live: 'live', stale: 'stale: no news from the server', reconnecting: 'reconnecting…', refused: 'refused: sign in again',
        limited: 'too many event streams for this token (close other tabs); retrying every 10 s',
      }[state];
      setLink(state, text || state);
      if (state === 'live') scheduleRefresh();
    },
  });
  app.poll = setInterval(() => refreshChannel().catch(() => {}), Math.max(1000, Number(app.config.segment_duration) * 1000));
  startPlayer(id);
}

function scheduleRefresh() {
  clearTimeout(app.refreshTimer);
  app.refreshTimer = setTimeout(() => refreshChannel().catch(() => {}), 30);
}

async function refreshChannel() {
  const id = app.channel;
  const schedule = await getSchedule(id);
  if (app.view !== 'channel' || app.channel !== id) return;
  // An older answer overtaken by a newer one (a poll and a stream refresh in flight together): never go back.
  if (app.schedule && (schedule.version < app.schedule.version
    || (schedule.version === app.schedule.version && Date.parse(schedule.live_edge) < Date.parse(app.schedule.live_edge)))) return;
  app.schedule = schedule;
  renderChannel();
  // The as-run folds the channel's whole log on the server: read again only when what it reports can have
  // changed (a new version, a break changing state) or, while a break is on air, every 10 s for its progress.
  const states = `${schedule.version} ${schedule.breaks.map((b) => `${b.id}:${b.state}`).join(',')}`;
  const onAir = schedule.breaks.some((b) => b.state === 'on-air');
  if (states === app.asrunStates && !(onAir && performance.now() - app.asrunAt > 10_000)) return;
  const asrun = await getJSON(`/channels/${id}/as-run`).catch(() => null);
  if (!asrun || app.view !== 'channel' || app.channel !== id) return; // a failed read is tried again next refresh
  app.asrunStates = states;
  app.asrunAt = performance.now();
  app.asrun = asrun.entries;
  renderAsRun();
  if (app.selected) renderDetail(false);
}

function renderChannel() {
  const s = app.schedule;
  const at = wallNow();
  for (const b of s.breaks) {
    const key = `${b.id}:${b.state}`;
    if (!(key in probe.shown)) probe.shown[key] = at;
  }
  const edge = Date.parse(s.live_edge);
  const air = s.breaks.find((b) => b.state === 'on-air');
  $('channel-facts').textContent = printable([
    `${app.config.segment_duration} s segments`, `version ${s.version}`, `live edge ${clock(edge)} UTC`,
    air ? `on air: ${air.id} ${seconds((edge - Date.parse(air.start_date)) / 1000)} / ${seconds(air.duration)} s` : 'nothing on air',
  ].join(' · '));
  $('channel-facts').dataset.version = s.version;
  $('zoom-label').textContent = ZOOMS[app.zoom].label;
  renderTimeline($('timeline'), {
    schedule: s, segmentSeconds: Number(app.config.segment_duration), epochMs: Date.parse(app.config.epoch),
    zoom: ZOOMS[app.zoom], selected: app.selected, onSelect: selectBreak,
  });
  renderAsRun();
  renderCommandChoices();
  if (app.selected) renderDetail(false);
}

function renderAsRun() {
  // Rebuilt only when a new as-run was read (a channel with thousands of past breaks has thousands of rows).
  if (app.asrunShown === app.asrun) return;
  app.asrunShown = app.asrun;
  const rows = app.asrun.slice().reverse().map((e) => {
    const tr = document.createElement('tr');
    tr.dataset.breakId = e.break_id;
    tr.dataset.status = e.status;
    for (const text of [e.break_id, e.status, clock(Date.parse(e.planned_start)), `${seconds(e.planned_duration)} s`,
      `${seconds(e.aired_duration)} s`, `${e.placed_by} (${e.placed_via})`, e.ended_early_by ? `${e.ended_early_by} (${e.ended_early_via})` : '—']) {
      tr.append(cell(text));
    }
    return tr;
  });
  $('asrun-rows').replaceChildren(...rows);
}

function renderCommandChoices() {
  if (!commandsSection.isConnected) return;
  // The operator's choice stays chosen: a break that left the list (it aired, ended or was cancelled meanwhile)
  // stays, marked, instead of the choice moving silently to another break; sending it gets the schedule's answer.
  // Options that did not change are left alone, so an open list and the focus survive the re-render.
  const fill = (select, breaks) => {
    const current = select.value;
    const options = breaks.map((b) => [b.id, `${b.id} (${b.state}, ${clock(Date.parse(b.start_date))})`]);
    if (current && !breaks.some((b) => b.id === current)) {
      const gone = app.schedule.breaks.find((b) => b.id === current);
      options.unshift([current, `${current} (${gone ? gone.state : 'no longer in the schedule'}: the schedule will refuse it)`]);
    }
    const signature = JSON.stringify(options);
    if (select.dataset.signature !== signature) {
      select.replaceChildren(...options.map(([value, text]) => new Option(printable(text), value)));
      select.dataset.signature = signature;
    }
    if (current) select.value = current;
  };
  // Which break "End break now" ends, as the server's schedule has it now (the command names no break: the server
  // ends what is on air when it decides).
  const air = app.schedule.breaks.find((b) => b.state === 'on-air');
  const target = printable(air ? `On air: ${air.id}, ${seconds((Date.parse(app.schedule.live_edge) - Date.parse(air.start_date)) / 1000)} s of ${seconds(air.duration)} s.` : 'Nothing on air.');
  if ($('end-target').textContent !== target) $('end-target').textContent = target;
  fill($('limit-break'), app.schedule.breaks.filter((b) => b.state === 'on-air' || b.state === 'scheduled'));
  fill($('cancel-break'), app.schedule.breaks.filter((b) => b.state === 'scheduled'));
}

$('zoom-in').addEventListener('click', () => { app.zoom = Math.min(ZOOMS.length - 1, app.zoom + 1); if (app.schedule) renderChannel(); });
$('zoom-out').addEventListener('click', () => { app.zoom = Math.max(0, app.zoom - 1); if (app.schedule) renderChannel(); });
window.addEventListener('resize', () => { if (app.view === 'channel' && app.schedule) renderChannel(); });

// ---- break detail: fields, as-run, the log's trail, refused attempts ------------------------------------------

/// How much of the log one read takes at most (pages of 1,000 events): the next read goes on from there.
const LOG_PAGES_PER_READ = 20;

/// The channel's log read so far, kept as each break's trail (a small line per event that names a break), and read
/// on from where it stopped: each event is fetched once, not the whole log at every render.
async function readLog(channel, version) {
  if (!app.log || app.log.channel !== channel) app.log = { channel, byBreak: new Map(), after: 0, more: false, reading: null, readVersion: 0 };
  const log = app.log;
  log.readVersion = Math.max(log.readVersion, version);
  if (!log.reading) {
    log.reading = (async () => {
      for (let pages = 0; pages < LOG_PAGES_PER_READ; pages++) {
        const page = await getJSON(`/channels/${encodeURIComponent(channel)}/events?after=${log.after}&limit=1000`);
        for (const e of page.events) {
          let id;
          try { id = JSON.parse(e.payload).id; } catch { id = undefined; }
          if (typeof id !== 'string') continue;
          if (!log.byBreak.has(id)) log.byBreak.set(id, []);
          log.byBreak.get(id).push({ decided_at: e.decided_at, type: e.type, actor: e.actor, source: e.source, reason: e.reason });
        }
        if (page.next === undefined || page.next === null || page.events.length === 0) { log.more = false; return log; }
        log.after = page.next;
      }
      log.more = true;
      return log;
    })().finally(() => { log.reading = null; });
  }
  return log.reading;
}

function selectBreak(id) {
  app.selected = id;
  renderChannel();
  renderDetail(true);
}

async function renderDetail(focus) {
  const id = app.selected;
  const b = app.schedule.breaks.find((x) => x.id === id);
  const box = $('break-detail');
  box.hidden = false;
  const title = document.createElement('h3');
  title.textContent = printable(`Break ${id}`);
  const fields = document.createElement('pre');
  fields.textContent = b ? breakFields(b) : 'no longer in the schedule';
  const entry = app.asrun.filter((e) => e.break_id === id).pop();
  const asrun = document.createElement('p');
  asrun.textContent = entry ? printable(`As-run: ${entry.status}, aired ${seconds(entry.aired_duration)} s of ${seconds(entry.planned_duration)} s`) : 'As-run: no entry yet';
  const trail = document.createElement('ol');
  trail.className = 'trail';
  // Commands the schedule refused that named this break (who, when, which door, why): GET …/refusals?break=.
  const refusedTitle = document.createElement('h4');
  refusedTitle.textContent = 'Refused attempts';
  const refused = document.createElement('ol');
  refused.className = 'trail refusals';
  const close = document.createElement('button');
  close.type = 'button';
  close.textContent = 'Close';
  close.addEventListener('click', () => { app.selected = null; box.hidden = true; renderChannel(); });
  box.replaceChildren(title, fields, asrun, trail, refusedTitle, refused, close);
  if (focus) box.focus();
  const ticket = ++app.detailTicket;
  try {
    // The log is read on when the detail opens or the schedule has moved on since the last read, not at every render.
    const kept = app.log && app.log.channel === app.channel ? app.log : null;
    const log = focus || !kept || kept.readVersion < app.schedule.version ? await readLog(app.channel, app.schedule.version) : kept;
    if (ticket !== app.detailTicket) return;
    const items = log.byBreak.get(id) || [];
    trail.replaceChildren(...items.map((e) => {
      const li = document.createElement('li');
      li.textContent = printable(`${e.decided_at} ${e.type} by ${e.actor} via ${e.source}${e.reason ? `, reason: ${e.reason}` : ''}`);
      return li;
    }));
    if (log.more) {
      const li = document.createElement('li');
      li.textContent = printable(`trail as far as event ${log.after} of the log (read on: reopen the break; all of it: cueline log)`);
      trail.append(li);
    }
  } catch (error) {
    trail.textContent = printable(`The log cannot be read: ${error.message}`);
  }
  try {
    // One page: the first 100 are enough at a glance (`cueline log` reads them all).
    // Read when the detail opens, then at most every 5 s while it stays open (it re-renders with the timeline).
    const kept = app.refusals;
    const fresh = !focus && kept && kept.channel === app.channel && kept.id === id && performance.now() - kept.at < 5000;
    const items = fresh ? kept.items
      : (await getJSON(`/channels/${app.channel}/refusals?break=${encodeURIComponent(id)}&limit=100`)).refusals;
    if (!fresh) app.refusals = { channel: app.channel, id, at: performance.now(), items };
    if (ticket !== app.detailTicket) return;
    if (items.length === 0) {
      const li = document.createElement('li');
      li.textContent = 'none';
      refused.replaceChildren(li);
    } else {
      refused.replaceChildren(...items.map((r) => {
        const li = document.createElement('li');
        li.textContent = printable(`${r.decided_at} ${r.command} by ${r.actor} via ${r.source} refused: ${r.reason}`);
        return li;
      }));
      if (items.length === 100) {
        const li = document.createElement('li');
        li.textContent = 'more: see cueline log';
        refused.append(li);
      }
    }
  } catch (error) {
    refused.textContent = printable(`The refused attempts cannot be read: ${error.message}`);
  }
}

// ---- commands ----------------------------------------------------------------------------------------------------

/// How long a command whose outcome is unknown (a network failure, a 503) may be sent again under the same
/// Idempotency-Key: a retry of that click, not a command given minutes later.
const RETRY_WINDOW_MS = 60_000;

/// Sends `command` for `form`. The Idempotency-Key is kept only while the outcome is unknown (no answer, or a 503
/// saying "retry with the same key"), and reused, with the If-Match of that attempt, only for the same command within
/// RETRY_WINDOW_MS: "End break now" always sends the same body, so a key kept for ever would make a later click
/// replay an old answer instead of ending the break on air. An answer the server replayed says so.
/// An Idempotency-Key. crypto.randomUUID() exists only in secure contexts (https, localhost): a console opened over
/// plain http from another machine makes the same random UUID from crypto.getRandomValues, which exists everywhere.
function newKey() {
  if (crypto.randomUUID) return crypto.randomUUID();
  const b = crypto.getRandomValues(new Uint8Array(16));
  b[6] = (b[6] & 0x0f) | 0x40;
  b[8] = (b[8] & 0x3f) | 0x80;
  const h = [...b].map((x) => x.toString(16).padStart(2, '0')).join('');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

async function submit(form, command, describeSuccess) {
  const result = $('command-result');
  if (!app.schedule) return;
  const seen = app.schedule.version;
  const body = JSON.stringify(command);
  const kept = form.pendingCommand;
  // A retry is the first attempt again: same key, same If-Match. If that attempt was applied (the stream may have
  // shown its version meanwhile) the server answers with its result; if not and the channel moved on, a 409 says what
  // changed.
  const retry = kept && kept.channel === app.channel && kept.body === body && performance.now() - kept.since < RETRY_WINDOW_MS;
  const pending = retry ? kept : { key: newKey(), channel: app.channel, body, version: seen, since: performance.now() };
  form.pendingCommand = pending;
  result.dataset.kind = 'pending';
  delete result.dataset.outcome;
  result.textContent = printable(`Sending ${command.command} (If-Match ${pending.version})${retry ? ' again, with the same Idempotency-Key' : ''}…`);
  try {
    const answer = await sendCommand(app.channel, command, { version: pending.version, key: pending.key });
    probe.acked = { version: String(answer.version), at: wallNow() };
    form.pendingCommand = null;
    result.dataset.outcome = answer.replayed ? 'replayed' : 'applied';
    result.dataset.kind = 'ok';
    const said = `${describeSuccess(answer)}${answer.note ? ` (${answer.note})` : ''}; version ${answer.version}.`;
    result.textContent = printable(answer.replayed
      ? `Already done by the earlier attempt, whose answer was lost; nothing new was applied: ${said} Send again to act on the schedule as it is now.`
      : said);
    await refreshChannel();
    return true;
  } catch (error) {
    const unknown = !(error instanceof APIError) || error.status === 503;
    if (unknown) {
      // It may have been written: the same click again within a minute is the same attempt (key and If-Match).
      result.dataset.kind = 'error';
      result.dataset.outcome = 'unknown';
      result.textContent = printable(`Outcome unknown (${error instanceof APIError ? `503: ${error.message}` : `no answer: ${error.message}`}): `
        + 'it may have been applied. Send the same command again within a minute: it reuses its Idempotency-Key, so it is applied at most once.');
      return false;
    }
    form.pendingCommand = null;
    result.dataset.kind = error.status === 409 ? 'conflict' : 'error';
    if (error.status === 409 && /changed meanwhile/.test(error.message)) {
      result.textContent = printable(`Conflict: ${error.message}.`);
      await showWhatChanged(seen);
    } else {
      result.textContent = printable(`Refused (${error.status}${error.field ? `, ${error.field}` : ''}): ${error.message}`);
    }
    await refreshChannel().catch(() => {});
    return false;
  }
}

/// After a 409 on If-Match: the events since the version the operator was looking at, then the fresh timeline.
async function showWhatChanged(seen) {
  const result = $('command-result');
  try {
    const page = await getJSON(`/channels/${app.channel}/events?after=${seen}&limit=20`);
    const list = document.createElement('ul');
    list.className = 'changes';
    for (const e of page.events) {
      const li = document.createElement('li');
      let id = '';
      try { id = JSON.parse(e.payload).id || ''; } catch { /* not JSON */ }
      li.textContent = printable(`v${e.version} ${e.type}${id ? ` ${id}` : ''} by ${e.actor} via ${e.source}`);
      list.append(li);
    }
    result.append(' What changed since you looked:', list, 'The timeline now shows the current schedule; check it and send again.');
  } catch (error) {
    result.append(printable(` (what changed cannot be read: ${error.message})`));
  }
}

$('place-form').addEventListener('submit', async (event) => {
  event.preventDefault();
  const form = event.currentTarget;
  const command = { command: 'place_break' };
  if (form.elements.when.value === 'at') command.start = $('place-at').value.trim();
  else command.in = Number($('place-in').value);
  const preset = form.elements.duration.value;
  command.duration = Number(preset === 'other' ? $('place-duration').value : preset);
  const asset = $('place-asset').value.trim();
  const lines = asset.split('\n').map((l) => l.trim()).filter(Boolean);
  if (lines.length > 1 || /,\s*\d/.test(lines[0] || '')) {
    command.pod = lines.map((l) => { const [uri, d] = l.split(','); return { uri: uri.trim(), duration: Number(d) }; });
  } else if (asset) {
    command.asset_uri = asset;
  }
  // The optional attributes: sent only when set, so the server's defaults stay the defaults.
  const text = (id) => $(id).value.trim();
  if (text('place-ad-server')) command.ad_server = text('place-ad-server');
  if (text('place-skip-offset')) command.skip_offset = Number(text('place-skip-offset'));
  if (text('place-skip-duration')) command.skip_duration = Number(text('place-skip-duration'));
  if (text('place-skip-label')) command.skip_label = text('place-skip-label');
  if (text('place-timeline-occupies')) command.timeline_occupies = text('place-timeline-occupies');
  if (text('place-timeline-style')) command.timeline_style = text('place-timeline-style');
  if (text('place-content-may-vary')) command.content_may_vary = text('place-content-may-vary') === 'yes';
  if ($('place-id').value.trim()) command.id = $('place-id').value.trim();
  const placed = await submit(form, command, (a) => {
    const e = a.events.find((x) => x.type === 'BreakPlaced');
    return e ? `Placed ${JSON.parse(e.payload).id}` : 'Placed';
  });
  if (placed) $('place-id').value = '';
});

$('end-confirm').addEventListener('input', () => { $('end-now').disabled = $('end-confirm').value.trim() !== 'END'; });
$('end-form').addEventListener('submit', async (event) => {
  event.preventDefault();
  if ($('end-confirm').value.trim() !== 'END') return;
  await submit(event.currentTarget, { command: 'cancel_current_event' }, (a) => `Ended: ${a.events.map((e) => e.type).join(', ')}`);
  $('end-confirm').value = '';
  $('end-now').disabled = true;
});

$('limit-form').addEventListener('submit', async (event) => {
  event.preventDefault();
  const id = $('limit-break').value;
  await submit(event.currentTarget, { command: 'set_playout_limit', id, playout_limit: Number($('limit-seconds').value) },
    () => `Limited ${id} to ${$('limit-seconds').value} s`);
});

$('cancel-form').addEventListener('submit', async (event) => {
  event.preventDefault();
  const id = $('cancel-break').value;
  await submit(event.currentTarget, { command: 'cancel_break', id }, () => `Cancelled ${id}`);
});

// ---- player pane -------------------------------------------------------------------------------------------------

/// The player runs in a sandboxed frame (player.html: no access to the token); it reports what is on air by message.
function startPlayer(id) {
  $('player-frame').src = `/console/player.html#${encodeURIComponent(id)}`;
  app.player = id;
  $('player-toggle').hidden = false;
  $('player-toggle').textContent = 'Stop';
}

function stopPlayer() {
  $('player-frame').src = 'about:blank';
  app.player = null;
  $('player-toggle').textContent = 'Play';
}

window.addEventListener('message', (event) => {
  if (event.source !== $('player-frame').contentWindow || !app.player) return;
  const text = event.data && event.data.cuelinePlayer;
  if (typeof text !== 'string') return;
  if (text === 'none') {
    $('player-state').textContent = 'No player: this server has no hls.js (CUELINE_HLSJS). The console works without it.';
    $('player-toggle').hidden = true;
    return;
  }
  $('player-state').textContent = printable(text.slice(0, 200));
});

$('player-toggle').addEventListener('click', () => {
  if (app.player) stopPlayer(); else if (app.channel) startPlayer(app.channel);
});

start();
