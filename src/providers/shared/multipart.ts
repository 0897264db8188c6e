import { randomBytes } from 'node:crypto';

/** One field of a multipart/form-data body: text, or a file with its name and type. */
export type FormField = { name: string; value: string } | { name: string; filename: string; contentType: string; data: Buffer };

/**
 * A multipart/form-data body (RFC 7578): the fields in order, file bytes exactly as given,
 * as a list of buffers (the file is not copied: an upload of 25 MB stays one buffer) and
 * their total length. `boundary` is for fixtures; calls get a random one.
 */
export function buildMultipart(fields: readonly FormField[], boundary = `----gateway${randomBytes(12).toString('hex')}`): { parts: Buffer[]; length: number; contentType: string } {
  const parts: Buffer[] = [];
  for (const field of fields) {
    if ('data' in field) {
      parts.push(
        Buffer.from(`--${boundary}\r\ncontent-disposition: form-data; name="${quote(field.name)}"; filename="${quote(field.filename)}"\r\ncontent-type: ${field.contentType}\r\n\r\n`),
        field.data,
        Buffer.from('\r\n'),
      );
    } else {
      parts.push(Buffer.from(`--${boundary}\r\ncontent-disposition: form-data; name="${quote(field.name)}"\r\n\r\n${field.value}\r\n`));
    }
  }
  parts.push(Buffer.from(`--${boundary}--\r\n`));
  let length = 0;
  for (const part of parts) length += part.length;
  return { parts, length, contentType: `multipart/form-data; boundary=${boundary}` };
}

/** A name in a quoted header parameter: quotes and line breaks escaped as browsers do (WHATWG). */
function quote(name: string): string {
  return name.replace(/"/g, '%22').replace(/\r/g, '%0D').replace(/\n/g, '%0A');
}
