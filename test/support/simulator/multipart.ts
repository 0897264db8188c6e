import busboy from 'busboy';

/** multipart/form-data bodies (OpenAI and Groq audio uploads), parsed with busboy from the bytes received. */

export interface MultipartFile {
  field: string;
  filename: string;
  contentType: string;
  data: Buffer;
}

export interface Multipart {
  /** Text fields; a field sent more than once (e.g. `timestamp_granularities[]`) is an array in order. */
  fields: Record<string, string | string[]>;
  files: MultipartFile[];
}

/** What `sim.requests` records for a multipart request. */
export interface MultipartRecord {
  fields: Record<string, string | string[]>;
  file: { filename: string; contentType: string; size: number } | null;
}

export function isMultipart(contentType: string | undefined): boolean {
  return /^multipart\/form-data\s*(;|$)/i.test(contentType ?? '');
}

/** Parses a whole multipart body; undefined when it is not well-formed multipart/form-data. */
export function parseMultipart(raw: Buffer, contentType: string): Promise<Multipart | undefined> {
  return new Promise((resolve) => {
    let parser: busboy.Busboy;
    try {
      parser = busboy({ headers: { 'content-type': contentType }, limits: { fieldSize: 4 * 1024 * 1024 } });
    } catch {
      resolve(undefined); // no boundary, or not multipart at all
      return;
    }
    const fields: Record<string, string | string[]> = {};
    const files: MultipartFile[] = [];
    const pending: Array<Promise<void>> = [];
    parser.on('field', (name, value) => {
      const previous = fields[name];
      if (previous === undefined) fields[name] = value;
      else if (Array.isArray(previous)) previous.push(value);
      else fields[name] = [previous, value];
    });
    parser.on('file', (name, stream, info) => {
      const chunks: Buffer[] = [];
      pending.push(
        new Promise<void>((done) => {
          stream.on('data', (chunk: Buffer) => chunks.push(chunk));
          stream.on('close', () => done());
          stream.on('error', () => done());
        }).then(() => {
          files.push({ field: name, filename: info.filename ?? '', contentType: info.mimeType, data: Buffer.concat(chunks) });
        }),
      );
    });
    parser.on('error', () => resolve(undefined));
    parser.on('close', () => {
      void Promise.all(pending).then(() => resolve({ fields, files }));
    });
    parser.end(raw);
  });
}

/** The first value of a field (a repeated field's first occurrence). */
export function field(form: Multipart, name: string): string | undefined {
  const value = form.fields[name];
  return Array.isArray(value) ? value[0] : value;
}

/** Every value of a field, in order. */
export function fieldValues(form: Multipart, name: string): string[] {
  const value = form.fields[name];
  if (value === undefined) return [];
  return Array.isArray(value) ? value : [value];
}

export function multipartRecord(form: Multipart): MultipartRecord {
  const file = form.files.find((f) => f.field === 'file') ?? form.files[0];
  return { fields: form.fields, file: file ? { filename: file.filename, contentType: file.contentType, size: file.data.length } : null };
}
