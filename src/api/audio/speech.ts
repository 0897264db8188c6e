import type { ServerResponse } from 'node:http';
import type { App } from '../../app.js';
import { SPEECH_FORMATS } from '../../config/types.js';
import { errors } from '../../core/errors.js';
import { addIgnoredParams, type SpeechDraft } from '../../core/gateway/media.js';
import { optionalEnum, optionalNumberIn, optionalString, requiredModel, requireObject } from '../../core/validate.js';
import { responseHeaders } from '../../http/respond.js';
import type { Route } from '../../http/server.js';
import type { Router } from '../../http/router.js';
import { requireCallingKey } from '../guards.js';
import { resolveAliases } from '../aliases.js';
import { callContext } from '../inference.js';

const KNOWN = ['model', 'input', 'voice', 'response_format', 'speed', 'instructions', 'stream_format'];

/** OpenAI speech request ► the canonical draft (the model's own limits are checked by the media service). */
export function decodeSpeech(raw: unknown): { draft: SpeechDraft; ignored: string[] } {
  const body = requireObject(raw);
  const model = requiredModel(body);
  const input = body.input;
  if (input === undefined || input === null) throw errors.missingField('input');
  if (typeof input !== 'string' || input.trim() === '') throw errors.invalidField('input', 'must be a non-empty string');
  const voice = body.voice;
  if (voice === undefined || voice === null) throw errors.missingField('voice');
  if (typeof voice !== 'string') throw errors.invalidField('voice', 'must be a string: alloy, echo, fable, onyx, nova or shimmer');
  const draft: SpeechDraft = { model, input, voice, format: optionalEnum(body, 'response_format', SPEECH_FORMATS) ?? 'mp3' };
  const speed = optionalNumberIn(body, 'speed', 0.25, 4);
  if (speed !== undefined) draft.speed = speed;
  const instructions = optionalString(body, 'instructions', { max: 4096 });
  if (instructions !== undefined) draft.instructions = instructions;
  // Audio bytes only: the SSE form (speech.audio.delta events) is not served.
  optionalEnum(body, 'stream_format', ['audio'] as const);
  return { draft, ignored: Object.keys(body).filter((key) => !KNOWN.includes(key)) };
}

/**
 * POST /v1/audio/speech: the audio is relayed to the client as the upstream produces it (one
 * write per upstream chunk, waiting for the socket to drain), never buffered whole.
 */
function drainedOrClosed(res: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.on('drain', done);
    res.on('close', done);
  });
}

export function registerSpeechRoutes(router: Router<Route>, app: App): void {
  router.add('POST', '/v1/audio/speech', {
    handle: async (ctx) => {
      const key = await requireCallingKey(app, ctx);
      const { draft, ignored } = decodeSpeech(await ctx.json());
      const call = callContext(ctx, key, 'audio.speech', app.catalog);
      resolveAliases(app.catalog, 'speech', draft, call);
      const outcome = await app.media.speech(draft, call);
      addIgnoredParams(outcome.headers, ignored);
      const res = ctx.res;
      const audio = outcome.audio;
      try {
        // Headers go with the first audio bytes (one write; the time to first byte is the upstream's).
        let next = await audio.next();
        res.writeHead(200, responseHeaders(res, { 'content-type': outcome.contentType, 'cache-control': 'no-store' }, outcome.headers));
        while (!next.done) {
          if (res.destroyed) break;
          if (!res.write(next.value)) await drainedOrClosed(res);
          next = await audio.next();
        }
      } catch (error) {
        // Before any audio: the error envelope, as for any failed call.
        if (!res.headersSent) throw error;
        // The upstream broke mid-audio: cut the response so the client sees it incomplete.
        app.logger.warn({ err: error, req_id: ctx.requestId }, 'speech upstream failed mid-stream');
        res.destroy();
        return;
      } finally {
        // Ends the relay where the loop left it (a client that left): the call settles there.
        await audio.return(undefined);
      }
      if (!res.destroyed) res.end();
    },
  });
}
