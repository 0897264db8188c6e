import type { App } from '../../app.js';
import { forwardedValue } from '../../core/client-address.js';
import { errors } from '../../core/errors.js';
import { addIgnoredParams, type ImageDraft, type ImageOutcome } from '../../core/gateway/media.js';
import { optionalEnum, optionalInteger, optionalString, requireObject } from '../../core/validate.js';
import { responseHeaders } from '../../http/respond.js';
import type { RequestContext, Route } from '../../http/server.js';
import type { Router } from '../../http/router.js';
import { requireCallingKey } from '../guards.js';
import { resolveAliases } from '../aliases.js';
import { callContext } from '../inference.js';

const KNOWN = ['model', 'prompt', 'n', 'size', 'quality', 'style', 'response_format', 'user'];

/** OpenAI image generation request ► the draft (each model's sizes, qualities and n are checked by the media service). */
export function decodeImages(raw: unknown): { draft: ImageDraft; ignored: string[] } {
  const body = requireObject(raw);
  const prompt = body.prompt;
  if (prompt === undefined || prompt === null) throw errors.missingField('prompt');
  if (typeof prompt !== 'string' || prompt.trim() === '') throw errors.invalidField('prompt', 'must be a non-empty string');
  const draft: ImageDraft = { prompt, responseFormat: optionalEnum(body, 'response_format', ['url', 'b64_json'] as const) ?? 'url' };
  if (body.model !== undefined && body.model !== null) {
    if (typeof body.model !== 'string' || body.model.trim() === '') throw errors.invalidField('model', 'must be a non-empty string (<provider>/<model>; GET /v1/models lists them)');
    draft.model = body.model;
  }
  const n = optionalInteger(body, 'n', 1, 10);
  if (n !== undefined) draft.n = n;
  const size = optionalString(body, 'size', { max: 16 });
  if (size !== undefined) draft.size = size;
  const quality = optionalString(body, 'quality', { max: 16 });
  if (quality !== undefined) draft.quality = quality;
  const style = optionalEnum(body, 'style', ['vivid', 'natural'] as const);
  if (style !== undefined) draft.style = style;
  const user = optionalString(body, 'user', { max: 256 });
  if (user !== undefined) draft.user = user;
  return { draft, ignored: Object.keys(body).filter((key) => !KNOWN.includes(key)) };
}

/** OpenAI's images answer: `{created, data: [{url | b64_json, revised_prompt?}]}`. */
export function encodeImages(outcome: ImageOutcome) {
  return {
    created: outcome.created,
    data: outcome.result.images.map((image) => ({
      ...(image.url !== undefined ? { url: image.url } : { b64_json: image.b64 as string }),
      ...(image.revisedPrompt !== undefined ? { revised_prompt: image.revisedPrompt } : {}),
    })),
  };
}

/** Where clients reach this gateway: server.public_url, else the request's own host. */
export function publicBaseUrl(app: App, ctx: RequestContext): string {
  if (app.config.server.publicUrl) return app.config.server.publicUrl;
  const headers = ctx.req.headers;
  const proxied = app.config.server.trustProxy;
  const proto = (proxied ? forwardedValue(headers['x-forwarded-proto']) : undefined) ?? ('encrypted' in ctx.req.socket ? 'https' : 'http');
  const host = (proxied ? forwardedValue(headers['x-forwarded-host']) : undefined) ?? (headers.host || undefined) ?? `${app.config.server.host}:${app.config.server.port}`;
  return `${proto}://${host}`;
}

/** POST /v1/images/generations, and GET of the images the gateway hosts (no key: the name is the secret). */
export function registerImageRoutes(router: Router<Route>, app: App): void {
  router.add('POST', '/v1/images/generations', {
    handle: async (ctx) => {
      const key = await requireCallingKey(app, ctx);
      const { draft, ignored } = decodeImages(await ctx.json());
      const call = callContext(ctx, key, 'images.generations', app.catalog);
      resolveAliases(app.catalog, 'image', draft, call);
      const outcome = await app.media.generateImages(draft, call, publicBaseUrl(app, ctx));
      addIgnoredParams(outcome.headers, ignored);
      ctx.send(200, encodeImages(outcome), outcome.headers);
    },
  });
  router.add('GET', '/v1/images/files/:name', {
    handle: async (ctx) => {
      const image = await app.hostedImages.get(ctx.params.name ?? '');
      if (!image) throw errors.routeNotFound('GET', '/v1/images/files/<name>');
      const res = ctx.res;
      const seconds = Math.max(0, Math.floor((image.expiresAt - Date.now()) / 1000));
      res.writeHead(
        200,
        responseHeaders(res, {
          'content-type': image.contentType,
          'content-length': String(image.data.length),
          'cache-control': `private, max-age=${seconds}, immutable`,
          'x-content-type-options': 'nosniff',
          'content-security-policy': "default-src 'none'",
        }),
      );
      res.end(image.data);
    },
  });
}
