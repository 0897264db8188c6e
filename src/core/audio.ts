import { parseBuffer } from 'music-metadata';

/** The media type of each audio file extension the transcription endpoints take. */
export const AUDIO_TYPES: Readonly<Record<string, string>> = {
  flac: 'audio/flac',
  mp3: 'audio/mpeg',
  mpga: 'audio/mpeg',
  mpeg: 'audio/mpeg',
  mp4: 'audio/mp4',
  m4a: 'audio/mp4',
  ogg: 'audio/ogg',
  oga: 'audio/ogg',
  opus: 'audio/ogg',
  wav: 'audio/wav',
  webm: 'audio/webm',
};

export function extensionOf(filename: string): string {
  const dot = filename.lastIndexOf('.');
  return dot === -1 ? '' : filename.slice(dot + 1).toLowerCase();
}

/**
 * The duration of an audio file in seconds, read from its own headers (or, where they do not
 * state it, by walking its frames): undefined when the bytes are not audio music-metadata
 * can read.
 */
export async function audioDurationSeconds(audio: Buffer, mimeType: string): Promise<number | undefined> {
  try {
    const metadata = await parseBuffer(audio, { mimeType, size: audio.length }, { duration: true, skipCovers: true, skipPostHeaders: true });
    const duration = metadata.format.duration;
    return typeof duration === 'number' && Number.isFinite(duration) && duration > 0 ? duration : undefined;
  } catch {
    return undefined;
  }
}
