import { Problems, readBool, readInt, readSection, readString, type Raw } from './fields.js';
import type { MetricsConfig, OtlpProtocol, TelemetryConfig } from './types.js';

/** The `metrics` and `telemetry` sections (issue 31): load.ts calls these. */

export function readMetrics(raw: unknown, problems: Problems): MetricsConfig {
  const section = readSection(raw, 'metrics', ['enabled', 'path', 'token', 'key_labels', 'max_key_series'], problems);
  const path = readString(section, 'path', 'metrics', problems, { pattern: /^(\/[A-Za-z0-9._~-]+)+$/, rule: 'must be a path like /metrics (segments of letters, digits, . _ ~ -; no trailing slash)' }) ?? '/metrics';
  if (/^\/(v1|api|health|mcp|assets)(\/|$)|^\/favicon\.ico$|^\/index\.html$/.test(path)) problems.add('metrics.path', 'must not be one of the gateway\'s own paths (/v1, /api, /health, /mcp, /assets, the dashboard\'s files)');
  const token = readString(section, 'token', 'metrics', problems);
  if (token !== undefined && token.length < 16) problems.add('metrics.token', 'must be at least 16 characters');
  return {
    enabled: readBool(section, 'enabled', 'metrics', problems, true),
    path,
    ...(token !== undefined ? { token } : {}),
    keyLabels: readBool(section, 'key_labels', 'metrics', problems, false),
    maxKeySeries: readInt(section, 'max_key_series', 'metrics', problems, 1, 100_000, 1000),
  };
}

const PROTOCOLS: readonly OtlpProtocol[] = ['http/protobuf', 'http/json'];

/**
 * `telemetry:`, over the standard OpenTelemetry environment: traces are on with
 * `telemetry.enabled: true` or an OTLP endpoint in the environment (OTEL_SDK_DISABLED=true or
 * OTEL_TRACES_EXPORTER=none keep them off); the config's fields win over the variables.
 */
export function readTelemetry(raw: unknown, env: NodeJS.ProcessEnv, problems: Problems): TelemetryConfig {
  const section: Raw = readSection(raw, 'telemetry', ['enabled', 'endpoint', 'protocol', 'service_name', 'sample_ratio', 'capture_content'], problems);
  const disabled = env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true' || env.OTEL_TRACES_EXPORTER?.trim().toLowerCase() === 'none';
  const fromEnv = Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim() || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim());
  const enabled = readBool(section, 'enabled', 'telemetry', problems, fromEnv && !disabled);
  const endpoint = readString(section, 'endpoint', 'telemetry', problems, { pattern: /^https?:\/\/\S+$/, rule: 'must be an http(s) URL (the collector\'s traces URL, e.g. http://localhost:4318/v1/traces)' });
  const protocolText = readString(section, 'protocol', 'telemetry', problems) ?? (env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL?.trim() || env.OTEL_EXPORTER_OTLP_PROTOCOL?.trim() || 'http/protobuf');
  let protocol: OtlpProtocol = 'http/protobuf';
  if (PROTOCOLS.includes(protocolText as OtlpProtocol)) protocol = protocolText as OtlpProtocol;
  else if (enabled) problems.add('telemetry.protocol', `must be one of: ${PROTOCOLS.join(', ')} (gRPC is not served; got '${protocolText}')`);
  let sampleRatio: number | undefined;
  const ratio = section.sample_ratio;
  if (ratio !== undefined && ratio !== null && ratio !== '') {
    if (typeof ratio !== 'number' || !(ratio >= 0 && ratio <= 1)) problems.add('telemetry.sample_ratio', 'must be a number from 0 to 1');
    else sampleRatio = ratio;
  }
  // The standard variables, resolved here (the exporter would read process.env itself): the
  // traces URL as given, or the base endpoint with /v1/traces (the OTLP/HTTP spec's rule).
  const tracesUrl = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim();
  const baseUrl = env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim();
  const resolved = endpoint ?? (tracesUrl || (baseUrl ? `${baseUrl.replace(/\/+$/, '')}/v1/traces` : undefined));
  return {
    enabled,
    ...(resolved !== undefined ? { endpoint: resolved } : {}),
    protocol,
    serviceName: readString(section, 'service_name', 'telemetry', problems) ?? (env.OTEL_SERVICE_NAME?.trim() || 'llm-gateway'),
    ...(sampleRatio !== undefined ? { sampleRatio } : {}),
    captureContent: readBool(section, 'capture_content', 'telemetry', problems, false),
  };
}
