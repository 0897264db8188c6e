import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';

/**
 * An AWS Signature Version 4 verifier, written from AWS's documented algorithm (independent of
 * the @smithy signer the gateway uses), for the simulator's Bedrock endpoints:
 *
 *   canonical request = METHOD \n canonical URI \n canonical query \n canonical headers \n\n signed headers \n payload hash
 *   string to sign    = AWS4-HMAC-SHA256 \n x-amz-date \n DATE/REGION/SERVICE/aws4_request \n hex(sha256(canonical request))
 *   signing key       = HMAC(HMAC(HMAC(HMAC("AWS4" + secret, DATE), REGION), SERVICE), "aws4_request")
 *
 * The canonical URI is the path as received (still percent-encoded), normalized (empty, `.` and `..`
 * segments resolved) and URI-encoded once more segment by segment: AWS's double encoding for
 * every service but S3 (a model id's `:` sent as `%3A` is signed as `%253A`). The payload hash is
 * computed from the body; an `x-amz-content-sha256` header must equal it.
 * Failures carry the status, error type and message AWS answers with.
 */

export interface AwsCredentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
  region: string;
}

export interface SigV4Failure {
  status: number;
  /** The `x-amzn-errortype` name: UnrecognizedClientException, InvalidSignatureException, IncompleteSignatureException, ... */
  type: string;
  message: string;
}

export const SIGNATURE_MISMATCH =
  'The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method. Consult the service documentation for details.';
export const INVALID_TOKEN = 'The security token included in the request is invalid.';

const ALGORITHM = 'AWS4-HMAC-SHA256';
const SKEW_MS = 5 * 60 * 1000;

/** RFC 3986 percent-encoding: unreserved characters kept, every other byte as %XX (upper case). */
export function uriEncode(text: string): string {
  let out = '';
  for (const byte of Buffer.from(text, 'utf8')) {
    const c = String.fromCharCode(byte);
    if (/[A-Za-z0-9\-_.~]/.test(c)) out += c;
    else out += `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

/** The canonical URI of a raw (as received) path: normalized, then each segment encoded again. */
export function canonicalUri(rawPath: string): string {
  const segments: string[] = [];
  for (const segment of rawPath.split('/')) {
    if (segment === '' || segment === '.') continue;
    if (segment === '..') segments.pop();
    else segments.push(segment);
  }
  if (segments.length === 0) return '/';
  return `/${segments.map(uriEncode).join('/')}${rawPath.endsWith('/') ? '/' : ''}`;
}

function decode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

/** The canonical query of a raw query string: each name and value decoded and encoded again, sorted. */
export function canonicalQuery(rawQuery: string): string {
  if (rawQuery === '') return '';
  const pairs = rawQuery
    .split('&')
    .filter((part) => part !== '')
    .map((part) => {
      const eq = part.indexOf('=');
      const name = eq < 0 ? part : part.slice(0, eq);
      const value = eq < 0 ? '' : part.slice(eq + 1);
      return [uriEncode(decode(name)), uriEncode(decode(value))] as const;
    })
    .filter(([name]) => name.toLowerCase() !== 'x-amz-signature');
  pairs.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0));
  return pairs.map(([name, value]) => `${name}=${value}`).join('&');
}

/** A header's canonical value: every occurrence trimmed, runs of spaces collapsed, joined with ','. */
function canonicalHeaderValue(req: IncomingMessage, name: string): string {
  const values: string[] = [];
  for (let i = 0; i + 1 < req.rawHeaders.length; i += 2) {
    if ((req.rawHeaders[i] ?? '').toLowerCase() === name) values.push((req.rawHeaders[i + 1] ?? '').replace(/[\r\n]/g, ' ').replace(/[ \t]+/g, ' ').trim());
  }
  return values.join(',');
}

function header(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

const hmac = (key: Buffer | string, data: string): Buffer => createHmac('sha256', key).update(data, 'utf8').digest();
const sha256Hex = (data: Buffer | string): string => createHash('sha256').update(data).digest('hex');

/** The signing key for a date (YYYYMMDD), region and service. */
export function signingKey(secretAccessKey: string, date: string, region: string, service: string): Buffer {
  return hmac(hmac(hmac(hmac(`AWS4${secretAccessKey}`, date), region), service), 'aws4_request');
}

/** `20250102T030405Z` as a Date; undefined when not of that form. */
function parseAmzDate(value: string): Date | undefined {
  const m = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(value);
  if (!m) return undefined;
  const date = new Date(Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]), Number(m[4]), Number(m[5]), Number(m[6])));
  return Number.isNaN(date.getTime()) ? undefined : date;
}

const amzDate = (ms: number): string => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z').replace(/[-:]/g, '');

interface ParsedAuthorization {
  credential: string;
  signedHeaders: string;
  signature: string;
}

function parseAuthorization(value: string): ParsedAuthorization | SigV4Failure {
  const rest = value.slice(ALGORITHM.length).trim();
  const params: Record<string, string> = {};
  for (const part of rest.split(',')) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    params[part.slice(0, eq).trim()] = part.slice(eq + 1).trim();
  }
  const missing = ['Credential', 'Signature', 'SignedHeaders'].filter((name) => !params[name]);
  if (missing.length > 0) {
    return { status: 403, type: 'IncompleteSignatureException', message: `${missing.map((name) => `Authorization header requires '${name}' parameter.`).join(' ')} Authorization=${value}` };
  }
  return { credential: params.Credential ?? '', signedHeaders: params.SignedHeaders ?? '', signature: params.Signature ?? '' };
}

/**
 * Verifies a SigV4-signed request against the simulator's credentials (`service`: the signing
 * name, `bedrock`); undefined when it is good, else AWS's refusal. `now` in ms (tests can move it).
 */
export function verifySigV4(req: IncomingMessage, raw: Buffer, aws: AwsCredentials, service: string, now = Date.now()): SigV4Failure | undefined {
  const authorization = header(req, 'authorization') ?? '';
  if (!authorization.startsWith(`${ALGORITHM} `)) {
    return {
      status: 403,
      type: 'IncompleteSignatureException',
      message: `Authorization header requires 'Credential' parameter. Authorization header requires 'Signature' parameter. Authorization header requires 'SignedHeaders' parameter. Authorization header requires existence of either a 'X-Amz-Date' or a 'Date' header. Authorization=${authorization}`,
    };
  }
  const parsed = parseAuthorization(authorization);
  if ('status' in parsed) return parsed;
  const scope = parsed.credential.split('/');
  if (scope.length !== 5) {
    return {
      status: 403,
      type: 'IncompleteSignatureException',
      message: `Credential must have exactly 5 slash-delimited elements, e.g. keyid/date/region/service/term, got '${parsed.credential}'`,
    };
  }
  const [accessKeyId = '', scopeDate = '', scopeRegion = '', scopeService = '', terminator = ''] = scope;
  const dateHeader = header(req, 'x-amz-date');
  if (dateHeader === undefined) {
    return { status: 403, type: 'IncompleteSignatureException', message: `Authorization header requires existence of either a 'X-Amz-Date' or a 'Date' header. Authorization=${authorization}` };
  }
  const signedAt = parseAmzDate(dateHeader);
  if (!signedAt) {
    return { status: 403, type: 'IncompleteSignatureException', message: `Date must be in ISO-8601 'basic format'. Got '${dateHeader}'. See http://en.wikipedia.org/wiki/ISO_8601` };
  }
  const signedHeaders = parsed.signedHeaders.split(';');
  if (!signedHeaders.includes('host')) {
    return { status: 403, type: 'InvalidSignatureException', message: "'Host' or ':authority' must be a 'SignedHeader' in the AWS Authorization." };
  }
  if (terminator !== 'aws4_request') {
    return { status: 403, type: 'InvalidSignatureException', message: `Credential should be scoped with a valid terminator: 'aws4_request', not '${terminator}'.` };
  }
  if (scopeDate !== dateHeader.slice(0, 8)) {
    return {
      status: 403,
      type: 'InvalidSignatureException',
      message: `Date in Credential scope does not match YYYYMMDD from ISO-8601 version of date from HTTP: '${scopeDate}' != '${dateHeader.slice(0, 8)}', from '${dateHeader}'.`,
    };
  }
  if (signedAt.getTime() < now - SKEW_MS) {
    return { status: 403, type: 'InvalidSignatureException', message: `Signature expired: ${dateHeader} is now earlier than ${amzDate(now - SKEW_MS)} (${amzDate(now)} - 5 min.)` };
  }
  if (signedAt.getTime() > now + SKEW_MS) {
    return { status: 403, type: 'InvalidSignatureException', message: `Signature not yet current: ${dateHeader} is still later than ${amzDate(now + SKEW_MS)} (${amzDate(now)} + 5 min.)` };
  }
  if (scopeService !== service) return { status: 403, type: 'InvalidSignatureException', message: `Credential should be scoped to correct service: '${service}'. ` };
  if (scopeRegion !== aws.region) return { status: 403, type: 'InvalidSignatureException', message: 'Credential should be scoped to a valid region. ' };
  if (accessKeyId !== aws.accessKeyId) return { status: 403, type: 'UnrecognizedClientException', message: INVALID_TOKEN };
  // Temporary credentials: the key goes with its session token (and long-term keys take none).
  if (header(req, 'x-amz-security-token') !== aws.sessionToken) return { status: 403, type: 'UnrecognizedClientException', message: INVALID_TOKEN };

  const bodyHash = sha256Hex(raw);
  const declared = header(req, 'x-amz-content-sha256');
  if (declared !== undefined && declared !== bodyHash) {
    return { status: 403, type: 'InvalidSignatureException', message: "The provided 'x-amz-content-sha256' header does not match what was computed." };
  }
  const target = req.url ?? '/';
  const q = target.indexOf('?');
  const rawPath = q < 0 ? target : target.slice(0, q);
  const rawQuery = q < 0 ? '' : target.slice(q + 1);
  const canonicalRequest = [
    req.method ?? 'GET',
    canonicalUri(rawPath),
    canonicalQuery(rawQuery),
    signedHeaders.map((name) => `${name}:${canonicalHeaderValue(req, name)}`).join('\n') + '\n',
    parsed.signedHeaders,
    bodyHash,
  ].join('\n');
  const credentialScope = `${scopeDate}/${scopeRegion}/${scopeService}/aws4_request`;
  const stringToSign = [ALGORITHM, dateHeader, credentialScope, sha256Hex(canonicalRequest)].join('\n');
  const expected = createHmac('sha256', signingKey(aws.secretAccessKey, scopeDate, scopeRegion, scopeService)).update(stringToSign, 'utf8').digest('hex');
  const given = Buffer.from(parsed.signature, 'utf8');
  const want = Buffer.from(expected, 'utf8');
  if (given.length !== want.length || !timingSafeEqual(given, want)) return { status: 403, type: 'InvalidSignatureException', message: SIGNATURE_MISMATCH };
  return undefined;
}
