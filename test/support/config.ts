import { buildConfig, ConfigError } from '../../src/config/load.js';
import type { GatewayConfig } from '../../src/config/types.js';

/** The config tests' helpers: a config built from raw YAML-shaped data, and the problems a bad one reports. */

export const build = (raw: unknown, env: NodeJS.ProcessEnv = {}): GatewayConfig => buildConfig(raw, { env, baseDir: '/srv/gw', source: 'test.yaml' });

/** The problems `fn` throws as a ConfigError (none: []); any other error is rethrown. */
export function problemsThrownBy(fn: () => unknown): string[] {
  try {
    fn();
  } catch (error) {
    if (error instanceof ConfigError) return [...error.problems];
    throw error;
  }
  return [];
}

export function problemsOf(raw: unknown, env: NodeJS.ProcessEnv = {}): string[] {
  return problemsThrownBy(() => build(raw, env));
}
