import type { IncomingMessage } from 'node:http';
import busboy from 'busboy';
import { CallAborted, errors, GatewayError } from '../core/errors.js';
import { watchBodyIdle } from './body.js';

export interface UploadedFile {
  field: string;
  filename: string;
  mimeType: string;
  data: Buffer;
}

export interface MultipartForm {
  /** Text fields in order of arrival; repeated names (`key[]`) keep every value. */
  fields: Map<string, string[]>;
  file: UploadedFile | undefined;
}

export interface MultipartLimits {
  /** The most bytes of the one file (413 beyond). */
  fileBytes: number;
  /** The most bytes of one text field. */
  fieldBytes: number;
  /** The most text fields. */
  fields: number;
  /** The longest pause in the body before 408 (ctx.bodyIdleTimeoutMs; 0 or absent: none). */
  idleMs?: number;
}

/**
 * Reads a multipart/form-data body as it streams in (busboy): text fields, and one file kept
 * in memory up to `fileBytes` (413 as soon as it passes; the rest of the body is read and
 * dropped, never kept). A second file, a field too long or too many fields is a 400.
 */
export function readMultipart(req: IncomingMessage, limits: MultipartLimits): Promise<MultipartForm> {
  return new Promise((resolve, reject) => {
    let parser: busboy.Busboy;
    try {
      parser = busboy({ headers: req.headers, limits: { fileSize: limits.fileBytes, files: 1, fields: limits.fields, fieldSize: limits.fieldBytes, parts: limits.fields + 1 } });
    } catch {
      reject(errors.invalidField('content-type', 'must be multipart/form-data with a boundary'));
      return;
    }
    const form: MultipartForm = { fields: new Map(), file: undefined };
    let failure: GatewayError | undefined;
    const fail = (error: GatewayError): void => {
      failure ??= error;
    };
    parser.on('field', (name, value, info) => {
      if (info.valueTruncated) fail(errors.invalidField(name, `must be at most ${limits.fieldBytes} bytes`));
      const values = form.fields.get(name);
      if (values) values.push(value);
      else form.fields.set(name, [value]);
    });
    parser.on('file', (name, stream, info) => {
      const chunks: Buffer[] = [];
      let size = 0;
      // A form cut inside a file part errors the file stream itself (busboy): unheard, it would end the process.
      stream.on('error', () => undefined);
      stream.on('data', (chunk: Buffer) => {
        if (failure) return;
        size += chunk.length;
        chunks.push(chunk);
      });
      stream.on('limit', () => {
        chunks.length = 0;
        // Refused at once: the rest of the body is not read (the server closes the connection).
        req.unpipe(parser);
        reject(new GatewayError({ status: 413, type: 'request_too_large', reason: 'file_too_large', param: name, message: `${name}: the file exceeds the limit of ${limits.fileBytes} bytes` }));
      });
      stream.on('end', () => {
        if (failure) return;
        form.file = { field: name, filename: info.filename ?? '', mimeType: info.mimeType, data: Buffer.concat(chunks, size) };
      });
    });
    parser.on('filesLimit', () => fail(errors.invalidField('file', 'only one file may be sent')));
    parser.on('fieldsLimit', () => fail(errors.invalidField('fields', `at most ${limits.fields} form fields`)));
    parser.on('partsLimit', () => fail(errors.invalidField('fields', `at most ${limits.fields} form fields`)));
    parser.on('error', (error: Error) => {
      req.unpipe(parser);
      req.resume();
      reject(failure ?? errors.invalidField('body', `is not a well-formed multipart/form-data body (${error.message})`));
    });
    parser.on('close', () => (failure ? reject(failure) : resolve(form)));
    // A stalled upload: 408, and the server closes the connection (the rest is never read).
    watchBodyIdle(req, limits.idleMs ?? 0, () => {
      req.unpipe(parser);
      req.pause();
      reject(errors.bodyTimeout(limits.idleMs ?? 0));
    });
    // The client went away mid-upload: an abort, not a server error.
    req.on('error', () => reject(new CallAborted('client disconnected during the upload')));
    req.on('aborted', () => reject(new CallAborted('client disconnected during the upload')));
    req.pipe(parser);
  });
}
