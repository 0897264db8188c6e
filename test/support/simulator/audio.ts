import { readFileSync } from 'node:fs';
import { parseBuffer } from 'music-metadata';

/**
 * The audio the simulator serves and reads: committed fixtures (test/fixtures/audio, see the README
 * there for how they were made) and durations read from a file's own headers with music-metadata.
 */

/** OpenAI's speech `response_format`s; each has a fixture `speech.<format>` (24 kHz mono, 1.0 s). */
export type SpeechFormat = 'mp3' | 'opus' | 'aac' | 'flac' | 'wav' | 'pcm';
export const SPEECH_FORMATS: readonly SpeechFormat[] = ['mp3', 'opus', 'aac', 'flac', 'wav', 'pcm'];

/** The transcription inputs tests upload: `sample.<ext>`, about 2.5 s each (exact values in the README). */
export type SampleFormat = 'wav' | 'mp3' | 'm4a' | 'webm' | 'ogg' | 'flac';
export const SAMPLE_FORMATS: readonly SampleFormat[] = ['wav', 'mp3', 'm4a', 'webm', 'ogg', 'flac'];

function fixture(name: string): Buffer {
  return readFileSync(new URL(`../../fixtures/audio/${name}`, import.meta.url));
}

let speech: Record<SpeechFormat, Buffer> | undefined;
let samples: Record<SampleFormat, Buffer> | undefined;

/** The speech fixture bytes for a format (read once). `pcm` is raw s16le, 24 kHz, mono, no header. */
export function speechAudio(format: SpeechFormat): Buffer {
  speech ??= {
    mp3: fixture('speech.mp3'),
    opus: fixture('speech.opus'),
    aac: fixture('speech.aac'),
    flac: fixture('speech.flac'),
    wav: fixture('speech.wav'),
    pcm: fixture('speech.pcm'),
  };
  return speech[format];
}

/** A transcription input fixture's bytes (read once). */
export function sampleAudio(format: SampleFormat): Buffer {
  samples ??= {
    wav: fixture('sample.wav'),
    mp3: fixture('sample.mp3'),
    m4a: fixture('sample.m4a'),
    webm: fixture('sample.webm'),
    ogg: fixture('sample.ogg'),
    flac: fixture('sample.flac'),
  };
  return samples[format];
}

/** Raw PCM as the speech fixtures and OpenAI's `pcm` have it: 24 kHz × 16 bit × mono. */
export const PCM_BYTES_PER_SECOND = 48_000;

const MIME_BY_EXT: Record<string, string> = {
  mp3: 'audio/mpeg',
  mpga: 'audio/mpeg',
  mpeg: 'audio/mpeg',
  opus: 'audio/ogg',
  ogg: 'audio/ogg',
  oga: 'audio/ogg',
  aac: 'audio/aac',
  flac: 'audio/flac',
  wav: 'audio/wav',
  m4a: 'audio/mp4',
  mp4: 'audio/mp4',
  webm: 'audio/webm',
};

/** A MIME type for a file extension or MIME type (`mp3`, `.mp3`, `audio/mpeg; codecs=...`); undefined when unknown. */
export function audioMime(mimeOrExt: string): string | undefined {
  const value = mimeOrExt.trim().toLowerCase();
  if (value.includes('/')) return value.split(';')[0]?.trim();
  return MIME_BY_EXT[value.replace(/^\./, '')];
}

function isRawPcm(mimeOrExt: string): boolean {
  const value = mimeOrExt.trim().toLowerCase().split(';')[0]?.trim() ?? '';
  return value === 'pcm' || value === '.pcm' || value === 'audio/pcm' || value === 'audio/l16';
}

/**
 * The duration in seconds of an audio file, read from its own headers (music-metadata, whole file
 * scanned where the format needs it). Raw PCM (`pcm`, `audio/pcm`) is 24 kHz s16le mono:
 * bytes / 48000. Undefined when the bytes are not readable audio (or have no duration).
 * Generic MIME types (application/octet-stream) are left out so the content decides.
 */
export async function audioDurationSeconds(bytes: Uint8Array, mimeOrExt: string): Promise<number | undefined> {
  if (isRawPcm(mimeOrExt)) return bytes.length > 0 ? bytes.length / PCM_BYTES_PER_SECOND : undefined;
  if (bytes.length === 0) return undefined;
  const mime = audioMime(mimeOrExt);
  const generic = mime === undefined || mime === 'application/octet-stream' || mime === 'binary/octet-stream';
  try {
    const meta = await parseBuffer(bytes, { ...(generic ? {} : { mimeType: mime }), size: bytes.length }, { duration: true, skipCovers: true });
    const duration = meta.format.duration;
    if (duration === undefined || !Number.isFinite(duration) || duration <= 0) {
      // A mismatched MIME type makes music-metadata pick the wrong parser: let the content decide.
      if (!generic) return audioDurationSeconds(bytes, 'application/octet-stream');
      return undefined;
    }
    return duration;
  } catch {
    if (!generic) return audioDurationSeconds(bytes, 'application/octet-stream');
    return undefined;
  }
}
