/**
 * The timeline of a simulated transcript: its words spread evenly over the audio's duration and
 * split into (at most) two segments, shared by OpenAI/Groq's verbose_json, SRT, WebVTT and
 * Deepgram's words and utterances.
 */

export interface TimedWord {
  /** The word as written in the transcript, punctuation included ("Hello,"). */
  punctuated: string;
  /** Without leading/trailing punctuation, case kept ("Hello"); the punctuated form when that leaves nothing. */
  bare: string;
  start: number;
  end: number;
}

export interface TimedSegment {
  text: string;
  start: number;
  end: number;
  words: TimedWord[];
}

export interface Timeline {
  words: TimedWord[];
  segments: TimedSegment[];
}

const round3 = (n: number): number => Math.round(n * 1000) / 1000;

/** Spreads the words of `text` evenly over `duration` seconds; two segments (one for a single word, none for no words). */
export function timeline(text: string, duration: number): Timeline {
  const tokens = text.split(/\s+/).filter((w) => w !== '');
  const n = tokens.length;
  const words: TimedWord[] = tokens.map((punctuated, i) => {
    const bare = punctuated.replace(/^[^\p{L}\p{N}]+|[^\p{L}\p{N}]+$/gu, '');
    return { punctuated, bare: bare === '' ? punctuated : bare, start: round3((duration * i) / n), end: round3((duration * (i + 1)) / n) };
  });
  if (n === 0) return { words, segments: [] };
  const cut = n === 1 ? 1 : Math.ceil(n / 2);
  const groups = [words.slice(0, cut), words.slice(cut)].filter((g) => g.length > 0);
  const segments = groups.map((group, i) => ({
    text: group.map((w) => w.punctuated).join(' '),
    start: i === 0 ? 0 : (group[0]?.start ?? 0),
    end: i === groups.length - 1 ? round3(duration) : (group.at(-1)?.end ?? 0),
    words: group,
  }));
  return { words, segments };
}

function clock(seconds: number, separator: ',' | '.'): string {
  const ms = Math.round(seconds * 1000);
  const h = Math.floor(ms / 3_600_000);
  const m = Math.floor((ms % 3_600_000) / 60_000);
  const s = Math.floor((ms % 60_000) / 1000);
  const pad = (v: number, width = 2): string => String(v).padStart(width, '0');
  return `${pad(h)}:${pad(m)}:${pad(s)}${separator}${pad(ms % 1000, 3)}`;
}

/** SubRip: numbered cues, `00:00:00,000 --> 00:00:01,250`, a blank line after each. */
export function toSrt(segments: TimedSegment[]): string {
  return segments.map((s, i) => `${i + 1}\n${clock(s.start, ',')} --> ${clock(s.end, ',')}\n${s.text}\n\n`).join('');
}

/** WebVTT: the `WEBVTT` header, then cues `00:00:00.000 --> 00:00:01.250`. */
export function toVtt(segments: TimedSegment[]): string {
  return `WEBVTT\n\n${segments.map((s) => `${clock(s.start, '.')} --> ${clock(s.end, '.')}\n${s.text}\n\n`).join('')}`;
}
