import { Rng } from './rng.js';
import { BODY_LIMIT, INVALID_UTF8 } from './values.js';

/** Broken multipart bodies for the transcription endpoint. */

const CRLF = '\r\n';

export function formPart(boundary: string, name: string | undefined, value: Buffer | string, options: { filename?: string; type?: string; extra?: string; eol?: string } = {}): Buffer {
  const eol = options.eol ?? CRLF;
  const disposition = name === undefined ? '' : `Content-Disposition: form-data; name="${name}"${options.filename !== undefined ? `; filename="${options.filename}"` : ''}${eol}`;
  const head = `--${boundary}${eol}${disposition}${options.type ? `Content-Type: ${options.type}${eol}` : ''}${options.extra ?? ''}${eol}`;
  return Buffer.concat([Buffer.from(head, 'utf8'), typeof value === 'string' ? Buffer.from(value, 'utf8') : value, Buffer.from(eol)]);
}

export function multipartInput(rng: Rng): { body: Buffer; contentType: string; mutation: string; mayBeCut?: boolean } {
  const boundary = `----fuzz${rng.int(1e9)}`;
  const audio = Buffer.concat([Buffer.from('ID3'), rng.bytes(16 + rng.int(2000))]);
  const fields: [string, string][] = [
    ['model', rng.pick(['openai/whisper-1', 'whisper-1', 'deepgram/nova-3', 'groq/whisper-large-v3'])],
    ['response_format', 'json'],
    ['language', 'en'],
  ];
  let file: { name: string; filename: string; data: Buffer; type: string } = { name: 'file', filename: 'audio.mp3', data: audio, type: 'audio/mpeg' };
  let eol = CRLF;
  let closing = true;
  let contentType = `multipart/form-data; boundary=${boundary}`;
  let extraParts: Buffer[] = [];
  let preamble = '';
  let cut: number | undefined;
  let mayBeCut = false;
  const mutation: string[] = [];
  const count = rng.chance(0.7) ? 1 : 2;
  for (let i = 0; i < count; i++) {
    const kind = rng.int(24);
    switch (kind) {
      case 0:
        contentType = 'multipart/form-data';
        mutation.push('no-boundary');
        break;
      case 1:
        contentType = `multipart/form-data; boundary=other${boundary}`;
        mutation.push('boundary-mismatch');
        break;
      case 2:
        cut = rng.int(200 + audio.length);
        mutation.push(`truncated@${cut}`);
        break;
      case 3:
        closing = false;
        mutation.push('no-closing-boundary');
        break;
      case 4:
        extraParts.push(formPart(boundary, 'prompt', 'x', { extra: `X-Junk: ${'h'.repeat(100 * 1024)}${CRLF}` }));
        mutation.push('huge-part-header');
        break;
      case 5:
        eol = '\n';
        mutation.push('lf-only');
        break;
      case 6:
        extraParts.push(formPart(boundary, undefined, 'no disposition'));
        mutation.push('part-without-disposition');
        break;
      case 7:
        extraParts.push(Buffer.from(`--${boundary}${CRLF}Content-Disposition: form-data${CRLF}${CRLF}nameless${CRLF}`));
        mutation.push('part-without-name');
        break;
      case 8:
        extraParts.push(formPart(boundary, 'file', audio, { filename: 'second.mp3', type: 'audio/mpeg' }));
        mutation.push('two-files');
        break;
      case 9:
        for (let n = 0; n < 40; n++) extraParts.push(formPart(boundary, `prompt`, `p${n}`));
        mutation.push('40-fields');
        break;
      case 10:
        extraParts.push(formPart(boundary, 'prompt', 'p'.repeat(70 * 1024)));
        mutation.push('field-70KB');
        break;
      case 11:
        extraParts.push(formPart(boundary, rng.pick(['foo', 'stream', 'include[]', '__proto__', 'x'.repeat(500)]), rng.pick(['true', 'bar', ''])));
        mutation.push('unknown-or-extra-field');
        break;
      case 12:
        extraParts.push(Buffer.concat([Buffer.from(`--${boundary}${CRLF}Content-Disposition: form-data; name="`), rng.pick(INVALID_UTF8), Buffer.from(`"${CRLF}${CRLF}`), rng.pick(INVALID_UTF8), Buffer.from(CRLF)]));
        mutation.push('invalid-utf8-field');
        break;
      case 13:
        file = { ...file, filename: rng.pick(['audio', '../../etc/passwd.mp3', `${'a'.repeat(10_000)}.mp3`, '😀.mp3', '.mp3', 'a.MP3', 'a.exe', '', 'a.mp3\u0000.exe', 'a"b.mp3']) };
        mutation.push(`filename:${file.filename.slice(0, 30)}`);
        break;
      case 14:
        file = { ...file, name: rng.pick(['audio', 'files', 'file[]', 'FILE']) };
        mutation.push(`file-field:${file.name}`);
        break;
      case 15:
        file = { ...file, data: Buffer.alloc(0) };
        mutation.push('empty-file');
        break;
      case 16: {
        const name = rng.pick(['model', 'temperature', 'response_format', 'language', 'timestamp_granularities[]', 'prompt', 'stream']);
        const value = rng.pick(['', ' ', 'nope/nope', '1e309', 'NaN', '-1', '2', 'xml', 'english', 'EN', 'bad', 'true', 'p'.repeat(5000), '\u0000', '😀']);
        const at = fields.findIndex(([field]) => field === name);
        if (at === -1) fields.push([name, value]);
        else fields[at] = [name, value];
        mutation.push(`field:${name}=${value.slice(0, 20)}`);
        break;
      }
      case 17:
        contentType = `multipart/mixed; boundary=${boundary}`;
        mutation.push('multipart-mixed');
        break;
      case 18:
        contentType = rng.pick(['multipart/form-data; boundary=', `multipart/form-data; boundary=${'b'.repeat(200)}`, `multipart/form-data; boundary="${boundary}"; boundary=x`, 'multipart/form-data; boundary="unterminated', 'multipart/form-data;;boundary']);
        mutation.push(`odd-boundary-param:${contentType.slice(0, 50)}`);
        break;
      case 19:
        preamble = `garbage before${CRLF}${'\u0000'.repeat(10)}`;
        mutation.push('preamble');
        break;
      case 20:
        return { body: rng.bytes(rng.int(4000)), contentType, mutation: 'random-bytes' };
      case 21:
        fields.splice(rng.int(fields.length), 1);
        mutation.push('field-missing');
        break;
      case 22:
        file = { ...file, type: rng.pick(['text/html', '', 'audio/', 'x'.repeat(3000), 'application/json']) };
        mutation.push(`file-type:${file.type.slice(0, 20)}`);
        break;
      default:
        extraParts = [formPart(boundary, 'model', 'x'), ...extraParts];
        for (let n = 0; n < 500; n++) extraParts.push(formPart(boundary, 'timestamp_granularities[]', 'word'));
        mutation.push('500-parts');
    }
  }
  const parts = [
    Buffer.from(preamble),
    ...fields.map(([name, value]) => formPart(boundary, name, value, { eol })),
    formPart(boundary, file.name, file.data, { filename: file.filename, type: file.type, eol }),
    ...extraParts,
    Buffer.from(closing ? `--${boundary}--${eol}` : ''),
  ];
  let body = Buffer.concat(parts);
  if (cut !== undefined) body = body.subarray(0, cut);
  if (body.length > BODY_LIMIT) mayBeCut = true;
  return { body, contentType, mutation: `multipart:${mutation.join('+')}`, mayBeCut };
}
