import { maxHeaderSize, STATUS_CODES, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Logger } from 'pino';
import { errors, type GatewayError } from '../core/errors.js';
import { newRequestId } from '../core/ids.js';
import { requestIdOf, sendJson } from './respond.js';

/** The server's handler tells which response each socket is writing (one WeakMap set and delete per request). */
export interface ResponseTracker {
  started(socket: Socket, res: ServerResponse): void;
  closed(socket: Socket, res: ServerResponse): void;
}

/**
 * What node:http answers by itself, before any route runs: a request its parser refuses (400,
 * 431 past the header limit, 413 for chunk extensions, 408 past the headers or request timeout)
 * and an `Expect` other than 100-continue (417). Node writes those with an empty body; here
 * they carry the error envelope like every other refusal.
 *
 * The body fits both wire formats, as no route was matched to choose one: the gateway's
 * `{error: {message, type, code, ...}}` plus Anthropic's top-level `"type": "error"`.
 */
export function answerProtocolErrors(server: Server, logger: Logger): ResponseTracker {
  /** The response a socket's current request is writing, if any: nothing may be written over it. */
  const current = new WeakMap<Socket, ServerResponse>();
  const tracker: ResponseTracker = {
    started: (socket, res) => void current.set(socket, res),
    closed: (socket, res) => {
      if (current.get(socket) === res) current.delete(socket);
    },
  };

  server.on('clientError', (error: NodeJS.ErrnoException, socket: Socket) => {
    const inProgress = current.get(socket);
    // As node does: answer only where no response has started on this socket, then close it.
    if (socket.writable && !inProgress?.headersSent && error.code !== 'ECONNRESET') {
      const refusal = protocolError(error.code);
      const requestId = (inProgress && requestIdOf(inProgress)) ?? newRequestId();
      socket.write(rawResponse(refusal, requestId));
      logger.info({ req_id: requestId, status: refusal.status, error: refusal.reason, parser: error.code }, 'request refused by the HTTP parser');
    }
    socket.destroy();
  });

  // Only 100-continue is understood; anything else is refused before the route runs, body unread.
  server.on('checkExpectation', (req: IncomingMessage, res: ServerResponse) => {
    const refusal = errors.expectationFailed();
    const requestId = newRequestId();
    res.setHeader('connection', 'close');
    sendJson(res, refusal.status, body(refusal), { 'x-request-id': requestId });
    logger.info({ req_id: requestId, method: req.method, path: req.url?.split('?')[0], status: refusal.status, error: refusal.reason }, 'request');
  });
  return tracker;
}

function protocolError(code: string | undefined): GatewayError {
  switch (code) {
    case 'HPE_HEADER_OVERFLOW':
      return errors.headersTooLarge(maxHeaderSize);
    case 'HPE_CHUNK_EXTENSIONS_OVERFLOW':
      return errors.chunkExtensionsTooLarge();
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return errors.headersTimeout();
    default:
      return errors.malformedRequest(parserDetail(code));
  }
}

/** A few words for the parser's code (HPE_INVALID_HEADER_TOKEN → "invalid header token"). */
function parserDetail(code: string | undefined): string {
  if (!code?.startsWith('HPE_')) return 'the parser refused it';
  return code.slice(4).toLowerCase().replaceAll('_', ' ');
}

function body(error: GatewayError): unknown {
  return { type: 'error', ...error.toBody() };
}

function rawResponse(error: GatewayError, requestId: string): string {
  const text = JSON.stringify(body(error));
  return (
    `HTTP/1.1 ${error.status} ${STATUS_CODES[error.status] ?? ''}\r\n` +
    'content-type: application/json; charset=utf-8\r\n' +
    'cache-control: no-store\r\n' +
    `x-request-id: ${requestId}\r\n` +
    `content-length: ${Buffer.byteLength(text)}\r\n` +
    'connection: close\r\n\r\n' +
    text
  );
}
