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

export interface AudioProbe {
  /** Seconds, when the file states them (or its frames give them). */
  seconds?: number;
  /** Whether the bytes are audio the parser recognized (a container it could read). */
  recognized: boolean;
}

/**
 * The duration of an audio file, read from its own headers (or, where they do not state it,
 * by walking its frames). Tried with the client's media type, then the extension's, then
 * with none (the parser sniffs the bytes): clients often send a generic or wrong type.
 * A recording without a duration in its headers (a browser's WebM) is recognized without one.
 */
export async function probeAudio(audio: Buffer, ...mimeTypes: Array<string | undefined>): Promise<AudioProbe> {
  // Loaded by the first transcription, not with the daemon (~12 MB resident).
  const { parseBuffer } = await import('music-metadata');
  let recognized = false;
  for (const mimeType of [...new Set([...mimeTypes, undefined])]) {
    try {
      const metadata = await parseBuffer(audio, mimeType ? { mimeType, size: audio.length } : { size: audio.length }, { duration: true, skipCovers: true, skipPostHeaders: true });
      const duration = metadata.format.duration;
      if (typeof duration === 'number' && Number.isFinite(duration) && duration > 0) return { seconds: duration, recognized: true };
      if (metadata.format.container || metadata.format.codec) recognized = true;
    } catch {
      // Not this type: try the next.
    }
  }
  return { recognized };
}
