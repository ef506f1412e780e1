// The channel timeline: a time axis around the server's live edge, segment boundaries, one block per break.
// Pure rendering from (schedule, zoom); the live edge is the schedule's `live_edge`, never the browser's clock.
// The schedule's fields are read by their names on the wire (Sources/Wire/ScheduleView.swift, snake_case), and its
// text reaches the page through printable().
import { printable } from '/console/text.js';

export const ZOOMS = [
  { past: 600, ahead: 1800, label: '−10 min … +30 min' },
  { past: 180, ahead: 420, label: '−3 min … +7 min' },
  { past: 40, ahead: 80, label: '−40 s … +80 s' },
];

const STATE_TEXT = {
  scheduled: 'scheduled', 'on-air': 'on air', 'ended-early': 'ended early', aired: 'aired', cancelled: 'cancelled',
};

export function clock(ms) {
  return new Date(ms).toISOString().slice(11, 19);
}

export function seconds(text) {
  return Number(text).toFixed(1);
}

/// Whole milliseconds (a pod asset's `duration_milliseconds`) as the wire writes seconds: `6.000`.
export function millisecondsAsSeconds(ms) {
  return (Number(ms) / 1000).toFixed(3);
}

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = printable(text);
  return node;
}

/// The interstitial's fields as hover text, a line each (each escaped by printable()).
export function breakFields(b) {
  const lines = [
    `ID=${b.id}`, `START-DATE=${b.start_date}`, `PLANNED-DURATION=${b.planned_duration}`,
  ];
  if (b.playout_limit !== undefined) lines.push(`X-PLAYOUT-LIMIT=${b.playout_limit}`, `DURATION=${b.duration}`);
  if (b.asset_uri) lines.push(`X-ASSET-URI=${b.asset_uri}`);
  if (b.asset_list) lines.push(`X-ASSET-LIST=${b.asset_list}`);
  if (b.pod) lines.push(`pod: ${b.pod.map((a) => `${a.uri} (${millisecondsAsSeconds(a.duration_milliseconds)} s)`).join(', ')}`);
  if (b.cue && b.cue.length) lines.push(`CUE=${b.cue.join(',')}`);
  if (b.restrictions && b.restrictions.length) lines.push(`X-RESTRICT=${b.restrictions.join(',')}`);
  if (b.snap && b.snap.length) lines.push(`X-SNAP=${b.snap.join(',')}`);
  if (b.ad_server) lines.push(`ad server: ${b.ad_server}`);
  if (b.skip_offset !== undefined) {
    lines.push(`X-SKIP-CONTROL-OFFSET=${b.skip_offset}` + (b.skip_duration !== undefined ? `, -DURATION=${b.skip_duration}` : '') + (b.skip_label ? `, -LABEL-ID=${b.skip_label}` : ''));
  }
  if (b.timeline_occupies) lines.push(`X-TIMELINE-OCCUPIES=${b.timeline_occupies}`);
  if (b.timeline_style) lines.push(`X-TIMELINE-STYLE=${b.timeline_style}`);
  if (b.content_may_vary !== undefined) lines.push(`X-CONTENT-MAY-VARY=${b.content_may_vary ? 'YES' : 'NO'}`);
  lines.push(`placed by ${b.placed_by} via ${b.placed_via} at ${b.placed_at}`);
  if (b.ended_early_by) lines.push(`ended early by ${b.ended_early_by} at ${b.ended_early_at}`);
  if (b.cancelled_by) lines.push(`cancelled by ${b.cancelled_by} at ${b.cancelled_at}`);
  return lines.map(printable).join('\n');
}

export function describe(b, edge) {
  const start = Date.parse(b.start_date);
  const state = STATE_TEXT[b.state] || b.state;
  let text = `Break ${b.id}, ${state}, starts ${clock(start)}, planned ${seconds(b.planned_duration)} s`;
  if (b.state === 'on-air') text += `, ${seconds((edge - start) / 1000)} s played`;
  if (b.playout_limit !== undefined) text += `, limit ${seconds(b.playout_limit)} s`;
  return printable(text);
}

/// Renders the timeline into `root` (a positioned element); `onSelect(id)` when a block is activated.
export function renderTimeline(root, { schedule, segmentSeconds, epochMs, zoom, onSelect, selected }) {
  const edge = Date.parse(schedule.live_edge);
  // A block that has the keyboard focus keeps it across the re-render (once a segment).
  const focused = root.contains(document.activeElement) ? document.activeElement.dataset.breakId : undefined;
  const width = Math.max(320, root.clientWidth);
  const span = (zoom.past + zoom.ahead) * 1000;
  const from = edge - zoom.past * 1000;
  const x = (ms) => ((ms - from) / span) * width;
  const frag = document.createDocumentFragment();

  // Axis labels: the smallest step that keeps them 90 px apart.
  const step = [10, 30, 60, 120, 300, 600].map((s) => s * 1000).find((s) => (s / span) * width >= 90) || 600000;
  const axis = el('div', 'axis');
  axis.setAttribute('aria-hidden', 'true');
  for (let t = Math.ceil(from / step) * step; t <= from + span; t += step) {
    const tick = el('span', 'tick', clock(t));
    tick.style.left = `${x(t)}px`;
    axis.append(tick);
  }
  frag.append(axis);

  // Segment boundaries, when they are at least 6 px apart.
  const segmentMs = segmentSeconds * 1000;
  if ((segmentMs / span) * width >= 6) {
    const lanes = el('div', 'segments');
    lanes.setAttribute('aria-hidden', 'true');
    const first = epochMs + Math.ceil((from - epochMs) / segmentMs) * segmentMs;
    for (let t = first; t <= from + span; t += segmentMs) {
      const line = el('span', 'seg');
      line.style.left = `${x(t)}px`;
      lanes.append(line);
    }
    frag.append(lanes);
  }

  const track = el('div', 'track');
  for (const b of schedule.breaks) {
    const start = Date.parse(b.start_date);
    const end = Date.parse(b.end_date);
    const plannedEnd = start + Number(b.planned_duration) * 1000;
    if (plannedEnd < from || start > from + span) continue;
    const block = el('button', `brk state-${b.state}`);
    block.type = 'button';
    block.dataset.breakId = b.id;
    block.dataset.state = b.state;
    block.title = breakFields(b);
    block.setAttribute('aria-label', describe(b, edge));
    if (b.id === selected) block.setAttribute('aria-pressed', 'true');
    block.style.left = `${x(start)}px`;
    block.style.width = `${Math.max(6, x(end) - x(start))}px`;
    block.append(el('span', 'brk-label', b.id));
    if (b.state === 'on-air') {
      const fill = el('span', 'progress');
      fill.style.width = `${Math.min(100, Math.max(0, ((edge - start) / (end - start)) * 100))}%`;
      block.append(fill);
    }
    block.addEventListener('click', () => onSelect(b.id));
    track.append(block);
    if (b.playout_limit !== undefined && plannedEnd > end) {
      // What the limit cut off: the planned rest as a ghost, and the limit as a marked line.
      const rest = el('div', 'brk-rest');
      rest.setAttribute('aria-hidden', 'true');
      rest.style.left = `${x(end)}px`;
      rest.style.width = `${Math.max(2, x(plannedEnd) - x(end))}px`;
      track.append(rest);
      const limit = el('div', 'limit', `limit ${seconds(b.playout_limit)} s`);
      limit.dataset.breakId = b.id;
      limit.style.left = `${x(end)}px`;
      track.append(limit);
    }
  }
  frag.append(track);

  const line = el('div', 'edge');
  line.style.left = `${x(edge)}px`;
  line.append(el('span', 'edge-label', `live edge ${clock(edge)}`));
  line.dataset.liveEdge = schedule.live_edge;
  frag.append(line);
  root.replaceChildren(frag);
  if (focused !== undefined) {
    const again = root.querySelector(`.brk[data-break-id="${CSS.escape(focused)}"]`);
    if (again) again.focus();
  }
}
