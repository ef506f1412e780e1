// Free text from the server (actors, reasons, ids, error and refusal texts, notes) as the console shows it.
//
// The log keeps what was acknowledged, and an actor or reason may hold characters that change what is shown without
// being seen: a right-to-left override (U+202E) makes an audit line read reversed. The console writes them as the
// CLI's tables, as-run, log and errors do (`escapingControlCharacters` in Sources/HLS/Syntax/ControlCharacters.swift):
// C0 (TAB and line breaks included), DEL and C1 control characters, the line and paragraph separators
// (U+2028, U+2029), bidi embeddings, overrides and isolates (U+202A–202E, U+2066–2069), zero-width characters and
// direction marks (U+200B–200F) and U+FEFF, each as `\u{202E}` (hex in capitals). Everything else is left as it is.

const UNSEEN = /[\u0000-\u001F\u007F-\u009F\u200B-\u200F\u2028-\u202E\u2066-\u2069\uFEFF]/g;

/// `value` as text to show: every character above written as `\u{…}`.
export function printable(value) {
  return String(value).replace(UNSEEN, (c) => `\\u{${c.codePointAt(0).toString(16).toUpperCase()}}`);
}
