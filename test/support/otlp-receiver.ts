import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gunzipSync } from 'node:zlib';

/**
 * A real OTLP/HTTP traces receiver (a collector's `/v1/traces`) for the tests: it accepts
 * ExportTraceServiceRequest bodies in both OTLP/HTTP encodings, binary protobuf
 * (application/x-protobuf, decoded here from the wire format) and JSON (application/json),
 * and keeps every span it was sent, flattened with its resource's attributes.
 *
 * Field numbers (opentelemetry-proto, collector/trace/v1 and trace/v1, common/v1):
 *   ExportTraceServiceRequest { 1 resource_spans: ResourceSpans }
 *   ResourceSpans { 1 resource: Resource { 1 attributes: KeyValue }, 2 scope_spans: ScopeSpans }
 *   ScopeSpans { 1 scope, 2 spans: Span }
 *   Span { 1 trace_id bytes, 2 span_id bytes, 3 trace_state, 4 parent_span_id bytes, 5 name,
 *          6 kind enum, 7/8 times fixed64, 9 attributes KeyValue, 15 status: Status { 2 message, 3 code } }
 *   KeyValue { 1 key, 2 value: AnyValue { 1 string, 2 bool, 3 int64, 4 double, 5 array: ArrayValue { 1 values: AnyValue }, 6 kvlist, 7 bytes } }
 */

export type AttributeValue = string | number | boolean | AttributeValue[] | Record<string, unknown> | undefined;

export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  /** '' for a root span. */
  parentSpanId: string;
  name: string;
  /** OTLP SpanKind: 1 INTERNAL, 2 SERVER, 3 CLIENT. */
  kind: number;
  attributes: Record<string, AttributeValue>;
  /** OTLP StatusCode: 0 UNSET, 1 OK, 2 ERROR. */
  status: { code: number; message: string };
  resource: Record<string, AttributeValue>;
  /** How it arrived. */
  protocol: 'http/protobuf' | 'http/json';
}

export const SPAN_KIND_SERVER = 2;
export const SPAN_KIND_CLIENT = 3;
export const STATUS_ERROR = 2;

export interface OtlpReceiver {
  /** The traces URL (http://127.0.0.1:<port>/v1/traces). */
  url: string;
  spans: ReceivedSpan[];
  /** Each export request's content type, in order. */
  exports: string[];
  close(): Promise<void>;
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const exports: string[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      if (req.method !== 'POST' || req.url !== '/v1/traces') {
        res.writeHead(404).end();
        return;
      }
      let body = Buffer.concat(chunks);
      if (req.headers['content-encoding'] === 'gzip') body = gunzipSync(body);
      const contentType = String(req.headers['content-type'] ?? '');
      exports.push(contentType);
      try {
        if (contentType.startsWith('application/json')) {
          spans.push(...decodeJsonTraceRequest(JSON.parse(body.toString('utf8'))));
          res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
        } else if (contentType.startsWith('application/x-protobuf')) {
          spans.push(...decodeProtobufTraceRequest(body));
          // An empty ExportTraceServiceResponse.
          res.writeHead(200, { 'content-type': 'application/x-protobuf', 'content-length': '0' }).end();
        } else {
          res.writeHead(415).end();
        }
      } catch (error) {
        res.writeHead(400, { 'content-type': 'text/plain' }).end(String(error));
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/v1/traces`,
    spans,
    exports,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

// --- OTLP/JSON -----------------------------------------------------------------------------

interface JsonAnyValue {
  stringValue?: string;
  boolValue?: boolean;
  intValue?: number | string;
  doubleValue?: number | string;
  arrayValue?: { values?: JsonAnyValue[] };
  kvlistValue?: { values?: JsonKeyValue[] };
  bytesValue?: string;
}
interface JsonKeyValue {
  key: string;
  value?: JsonAnyValue;
}

function jsonValue(value: JsonAnyValue | undefined): AttributeValue {
  if (!value) return undefined;
  if (value.stringValue !== undefined) return value.stringValue;
  if (value.boolValue !== undefined) return value.boolValue;
  if (value.intValue !== undefined) return Number(value.intValue);
  if (value.doubleValue !== undefined) return Number(value.doubleValue);
  if (value.arrayValue !== undefined) return (value.arrayValue.values ?? []).map(jsonValue);
  if (value.kvlistValue !== undefined) return jsonAttributes(value.kvlistValue.values);
  if (value.bytesValue !== undefined) return value.bytesValue;
  return undefined;
}

function jsonAttributes(list: JsonKeyValue[] | undefined): Record<string, AttributeValue> {
  const out: Record<string, AttributeValue> = {};
  for (const kv of list ?? []) out[kv.key] = jsonValue(kv.value);
  return out;
}

export function decodeJsonTraceRequest(request: any): ReceivedSpan[] {
  const out: ReceivedSpan[] = [];
  for (const rs of request?.resourceSpans ?? []) {
    const resource = jsonAttributes(rs.resource?.attributes);
    for (const ss of rs.scopeSpans ?? []) {
      for (const span of ss.spans ?? []) {
        out.push({
          traceId: String(span.traceId ?? ''),
          spanId: String(span.spanId ?? ''),
          parentSpanId: String(span.parentSpanId ?? ''),
          name: String(span.name ?? ''),
          kind: Number(span.kind ?? 0),
          attributes: jsonAttributes(span.attributes),
          status: { code: Number(span.status?.code ?? 0), message: String(span.status?.message ?? '') },
          resource,
          protocol: 'http/json',
        });
      }
    }
  }
  return out;
}

// --- OTLP/protobuf (the wire format, just the fields above) --------------------------------

/** One field of a message: its number, wire type and value (varint as bigint, bytes for length-delimited). */
interface Field {
  no: number;
  wire: number;
  varint?: bigint;
  bytes?: Uint8Array;
  fixed?: Uint8Array;
}

function fields(buf: Uint8Array): Field[] {
  const out: Field[] = [];
  let pos = 0;
  const varint = (): bigint => {
    let result = 0n;
    let shift = 0n;
    for (;;) {
      if (pos >= buf.length) throw new Error('truncated varint');
      const byte = buf[pos++]!;
      result |= BigInt(byte & 0x7f) << shift;
      if ((byte & 0x80) === 0) return result;
      shift += 7n;
      if (shift > 63n) throw new Error('varint too long');
    }
  };
  while (pos < buf.length) {
    const tag = Number(varint());
    const no = tag >>> 3;
    const wire = tag & 7;
    if (wire === 0) out.push({ no, wire, varint: varint() });
    else if (wire === 1) {
      out.push({ no, wire, fixed: buf.subarray(pos, pos + 8) });
      pos += 8;
    } else if (wire === 2) {
      const length = Number(varint());
      if (pos + length > buf.length) throw new Error('truncated length-delimited field');
      out.push({ no, wire, bytes: buf.subarray(pos, pos + length) });
      pos += length;
    } else if (wire === 5) {
      out.push({ no, wire, fixed: buf.subarray(pos, pos + 4) });
      pos += 4;
    } else throw new Error(`unsupported wire type ${wire}`);
  }
  if (pos !== buf.length) throw new Error('trailing bytes');
  return out;
}

const utf8 = (bytes: Uint8Array | undefined): string => Buffer.from(bytes ?? new Uint8Array()).toString('utf8');
const hex = (bytes: Uint8Array | undefined): string => Buffer.from(bytes ?? new Uint8Array()).toString('hex');

function anyValue(buf: Uint8Array): AttributeValue {
  let value: AttributeValue;
  for (const f of fields(buf)) {
    if (f.no === 1 && f.wire === 2) value = utf8(f.bytes);
    else if (f.no === 2 && f.wire === 0) value = f.varint !== 0n;
    else if (f.no === 3 && f.wire === 0) value = Number(BigInt.asIntN(64, f.varint!));
    else if (f.no === 4 && f.wire === 1) value = Buffer.from(f.fixed!).readDoubleLE(0);
    else if (f.no === 5 && f.wire === 2) value = fields(f.bytes!).filter((item) => item.no === 1 && item.wire === 2).map((item) => anyValue(item.bytes!));
    else if (f.no === 6 && f.wire === 2) value = keyValues(fields(f.bytes!).filter((item) => item.no === 1 && item.wire === 2));
    else if (f.no === 7 && f.wire === 2) value = hex(f.bytes);
  }
  return value;
}

function keyValue(buf: Uint8Array): [string, AttributeValue] {
  let key = '';
  let value: AttributeValue;
  for (const f of fields(buf)) {
    if (f.no === 1 && f.wire === 2) key = utf8(f.bytes);
    else if (f.no === 2 && f.wire === 2) value = anyValue(f.bytes!);
  }
  return [key, value];
}

function keyValues(list: Field[]): Record<string, AttributeValue> {
  const out: Record<string, AttributeValue> = {};
  for (const f of list) {
    const [key, value] = keyValue(f.bytes!);
    out[key] = value;
  }
  return out;
}

function span(buf: Uint8Array, resource: Record<string, AttributeValue>): ReceivedSpan {
  const out: ReceivedSpan = { traceId: '', spanId: '', parentSpanId: '', name: '', kind: 0, attributes: {}, status: { code: 0, message: '' }, resource, protocol: 'http/protobuf' };
  const attributes: Field[] = [];
  for (const f of fields(buf)) {
    if (f.no === 1 && f.wire === 2) out.traceId = hex(f.bytes);
    else if (f.no === 2 && f.wire === 2) out.spanId = hex(f.bytes);
    else if (f.no === 4 && f.wire === 2) out.parentSpanId = hex(f.bytes);
    else if (f.no === 5 && f.wire === 2) out.name = utf8(f.bytes);
    else if (f.no === 6 && f.wire === 0) out.kind = Number(f.varint);
    else if (f.no === 9 && f.wire === 2) attributes.push(f);
    else if (f.no === 15 && f.wire === 2) {
      for (const s of fields(f.bytes!)) {
        if (s.no === 2 && s.wire === 2) out.status.message = utf8(s.bytes);
        else if (s.no === 3 && s.wire === 0) out.status.code = Number(s.varint);
      }
    }
  }
  out.attributes = keyValues(attributes);
  return out;
}

export function decodeProtobufTraceRequest(buf: Uint8Array): ReceivedSpan[] {
  const out: ReceivedSpan[] = [];
  for (const rs of fields(buf)) {
    if (rs.no !== 1 || rs.wire !== 2) continue;
    const parts = fields(rs.bytes!);
    let resource: Record<string, AttributeValue> = {};
    for (const r of parts) {
      if (r.no === 1 && r.wire === 2) resource = keyValues(fields(r.bytes!).filter((f) => f.no === 1 && f.wire === 2));
    }
    for (const ss of parts) {
      if (ss.no !== 2 || ss.wire !== 2) continue;
      for (const s of fields(ss.bytes!)) if (s.no === 2 && s.wire === 2) out.push(span(s.bytes!, resource));
    }
  }
  return out;
}
