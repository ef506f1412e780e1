// The console's only door to Cueline: the ordinary HTTP API, with the token in an Authorization header.

const TOKEN_KEY = 'cueline.token';

export const session = {
  get token() { return sessionStorage.getItem(TOKEN_KEY); },
  set token(value) {
    if (value) sessionStorage.setItem(TOKEN_KEY, value); else sessionStorage.removeItem(TOKEN_KEY);
  },
};

export class APIError extends Error {
  constructor(status, body) {
    super(body && body.error ? body.error : `HTTP ${status}`);
    this.status = status;
    this.field = body && body.field;
    this.body = body;
  }
}

function headers(extra = {}) {
  const h = { ...extra };
  if (session.token) h.Authorization = `Bearer ${session.token}`;
  return h;
}

export async function getJSON(path) {
  return (await getJSONWithDate(path)).body;
}

/// The body and the server's `Date` (its clock, to the second), so health is judged without the browser's clock.
export async function getJSONWithDate(path) {
  const response = await fetch(path, { headers: headers({ Accept: 'application/json' }), cache: 'no-store' });
  const body = await response.json().catch(() => null);
  if (!response.ok) throw new APIError(response.status, body);
  return { body, date: Date.parse(response.headers.get('Date') || '') };
}

/// GET …/schedule, every page of it (following `next`, at most 50 pages of 100): the schedule as one answer, with the
/// first page's `Date`. Pages of the default size are answered at once, never queued among the audit reads.
export async function getScheduleWithDate(channel) {
  const path = `/channels/${encodeURIComponent(channel)}/schedule`;
  const first = await getJSONWithDate(path);
  const schedule = first.body;
  let next = schedule.next;
  for (let pages = 1; next && pages < 50; pages += 1) {
    const page = await getJSON(`${path}?after=${encodeURIComponent(next)}`);
    schedule.breaks.push(...page.breaks);
    next = page.next === next ? undefined : page.next;
  }
  delete schedule.next;
  return { body: schedule, date: first.date };
}

export async function getSchedule(channel) {
  return (await getScheduleWithDate(channel)).body;
}

/// POST …/commands with an Idempotency-Key (a retry of the same submission reuses it) and If-Match on the version
/// the operator was looking at.
export async function sendCommand(channel, command, { version, key }) {
  const extra = { 'Content-Type': 'application/json', 'Idempotency-Key': key };
  if (version !== undefined && version !== null) extra['If-Match'] = String(version);
  const response = await fetch(`/channels/${encodeURIComponent(channel)}/commands`, {
    method: 'POST', headers: headers(extra), body: JSON.stringify(command),
  });
  const body = await response.json().catch(() => null);
  if (!response.ok) throw new APIError(response.status, body);
  return body;
}

/// Server-Sent Events over fetch(): EventSource cannot send an Authorization header, and a token in the URL would
/// end up in logs and history. The stream is read with a ReadableStream reader and parsed here (id, event, data,
/// retry, comments); after a network loss or the server's end of stream it reconnects with Last-Event-ID, the id
/// of the last event it handled, so nothing is missed or repeated. `onState` gets 'live', 'stale' (no bytes for
/// longer than three keep-alives; it stays stale while it reconnects, until bytes come again) or 'reconnecting'.
export class EventStream {
  constructor(channel, lastEventId, { onEvent, onState }) {
    this.channel = channel;
    this.lastEventId = lastEventId;
    this.onEvent = onEvent;
    this.onState = onState;
    this.retry = 1000;
    this.closed = false;
    this.lastByte = performance.now();
    this.state = '';
    this.watchdog = setInterval(() => this.checkStale(), 1000);
    this.run();
  }

  close() {
    this.closed = true;
    clearInterval(this.watchdog);
    if (this.abort) this.abort.abort();
  }

  setState(state) {
    if (state === this.state) return;
    this.state = state;
    this.onState(state);
  }

  checkStale() {
    // The server writes a keep-alive comment every 5 s: three missed means the link is gone.
    if (this.state === 'live' && performance.now() - this.lastByte > 15000) {
      this.setState('stale');
      if (this.abort) this.abort.abort();
    }
  }

  async run() {
    while (!this.closed) {
      try {
        await this.connect();
      } catch (error) {
        if (this.closed) return;
        if (error instanceof APIError && (error.status === 401 || error.status === 403)) {
          this.setState('refused');
          return;
        }
        if (error instanceof APIError && error.status === 429) {
          // Too many streams for this token (other tabs): try again, but slowly, and say why.
          this.setState('limited');
          await new Promise((resolve) => setTimeout(resolve, 10_000));
          continue;
        }
      }
      if (this.closed) return;
      if (this.state !== 'stale') this.setState('reconnecting');
      await new Promise((resolve) => setTimeout(resolve, this.retry));
    }
  }

  async connect() {
    this.abort = new AbortController();
    const h = headers({ Accept: 'text/event-stream' });
    if (this.lastEventId !== null && this.lastEventId !== undefined) h['Last-Event-ID'] = String(this.lastEventId);
    const response = await fetch(`/channels/${encodeURIComponent(this.channel)}/events`, {
      headers: h, cache: 'no-store', signal: this.abort.signal,
    });
    if (!response.ok) throw new APIError(response.status, await response.json().catch(() => null));
    this.lastByte = performance.now();
    this.setState('live');
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = '';
    let event = { id: null, type: 'message', data: [] };
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      this.lastByte = performance.now();
      if (this.state !== 'live') this.setState('live');
      buffer += value;
      let newline;
      while ((newline = buffer.search(/\r\n|\r|\n/)) >= 0) {
        const line = buffer.slice(0, newline);
        buffer = buffer.slice(newline + (buffer.startsWith('\r\n', newline) ? 2 : 1));
        if (line === '') {
          if (event.data.length > 0) {
            if (event.id !== null) this.lastEventId = event.id;
            this.onEvent({ id: event.id, type: event.type, data: event.data.join('\n') });
          }
          event = { id: null, type: 'message', data: [] };
          continue;
        }
        if (line.startsWith(':')) continue;
        const colon = line.indexOf(':');
        const field = colon < 0 ? line : line.slice(0, colon);
        let text = colon < 0 ? '' : line.slice(colon + 1);
        if (text.startsWith(' ')) text = text.slice(1);
        if (field === 'id') event.id = text;
        else if (field === 'event') event.type = text;
        else if (field === 'data') event.data.push(text);
        else if (field === 'retry' && /^\d+$/.test(text)) this.retry = Math.min(10000, Number(text));
      }
    }
  }
}
