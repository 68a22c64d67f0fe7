/**
 * DROPIN_TENANT_UPSTREAMS_FILE read at start: each tenant's endpoints with their keys (inline or
 * from the variable `apiKeyEnv` names), and every mistake refused with the file and the field
 * named, before the API takes a request.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadTenantUpstreams, TenantUpstreamsError } from './dropin-tenant-upstreams';
import { dropInSettings, parseEnv } from './env';

const dir = mkdtempSync(join(tmpdir(), 'tenant-upstreams-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let files = 0;
function file(content: unknown): string {
  const path = join(dir, `upstreams-${(files += 1)}.json`);
  writeFileSync(path, typeof content === 'string' ? content : JSON.stringify(content));
  return path;
}

describe('loadTenantUpstreams', () => {
  it('reads each tenant, keys inline, from a named variable, or none', () => {
    const path = file({
      acme: {
        openai: { baseURL: 'https://api.openai.com/v1', apiKeyEnv: 'ACME_OPENAI_KEY' },
        anthropic: { baseURL: 'https://api.anthropic.com', apiKey: 'sk-ant-inline' },
      },
      lab: { openai: { baseURL: 'http://vllm.lab:8000/v1' } },
      empty: {},
    });
    const tenants = loadTenantUpstreams(path, { ACME_OPENAI_KEY: 'sk-from-env' });
    expect(Object.fromEntries(tenants)).toEqual({
      acme: {
        openai: { baseURL: 'https://api.openai.com/v1', apiKey: 'sk-from-env' },
        anthropic: { baseURL: 'https://api.anthropic.com', apiKey: 'sk-ant-inline' },
      },
      lab: { openai: { baseURL: 'http://vllm.lab:8000/v1', apiKey: '' } },
      empty: {},
    });
  });

  it.each([
    [
      'a base URL that is no URL',
      { acme: { openai: { baseURL: 'localhost:4010' } } },
      /acme\.openai\.baseURL/,
    ],
    ['a protocol it does not know', { acme: { gemini: { baseURL: 'https://x.test' } } }, /gemini/],
    ['a field it does not know', { acme: { openai: { baseURL: 'https://x.test', key: 'k' } } }, /key/],
    [
      'both key forms',
      { acme: { openai: { baseURL: 'https://x.test', apiKey: 'k', apiKeyEnv: 'K' } } },
      /not both[\s\S]*at acme\.openai/,
    ],
    [
      'an apiKeyEnv that is no variable name',
      { acme: { openai: { baseURL: 'https://x.test', apiKeyEnv: 'A-B' } } },
      /apiKeyEnv/,
    ],
    [
      'a padded tenant id',
      { ' acme': { openai: { baseURL: 'https://x.test' } } },
      /Invalid key in record[\s\S]*" acme"/,
    ],
    ['a list instead of an object', [{ acme: {} }], /expected record/i],
  ])('refuses %s, naming the field', (_, content, field) => {
    const path = file(content);
    const load = () => loadTenantUpstreams(path, {});
    expect(load).toThrow(TenantUpstreamsError);
    expect(load).toThrow(path);
    expect(load).toThrow(field);
  });

  it('refuses an apiKeyEnv whose variable is unset or empty, naming tenant and variable', () => {
    const path = file({
      acme: { anthropic: { baseURL: 'https://api.anthropic.com', apiKeyEnv: 'ACME_KEY' } },
    });
    expect(() => loadTenantUpstreams(path, {})).toThrow(
      /acme\.anthropic: apiKeyEnv names ACME_KEY, which is unset/,
    );
    expect(() => loadTenantUpstreams(path, { ACME_KEY: '' })).toThrow(/ACME_KEY/);
  });

  it('refuses a file that is missing or not JSON, naming it', () => {
    const missing = join(dir, 'nowhere.json');
    expect(() => loadTenantUpstreams(missing, {})).toThrow(`${missing}: cannot be read (ENOENT)`);
    const broken = file('{"acme": ');
    expect(() => loadTenantUpstreams(broken, {})).toThrow(/is not JSON/);
  });
});

describe('DROPIN_TENANT_UPSTREAMS_FILE', () => {
  it('is read into the settings, secrets looked up in the environment given', () => {
    const path = file({ acme: { openai: { baseURL: 'https://a.test/v1', apiKeyEnv: 'ACME_KEY' } } });
    const settings = dropInSettings(parseEnv({ DROPIN_TENANT_UPSTREAMS_FILE: path }), {
      ACME_KEY: 'sk-acme',
    });
    expect(Object.fromEntries(settings.tenantUpstreams!)).toEqual({
      acme: { openai: { baseURL: 'https://a.test/v1', apiKey: 'sk-acme' } },
    });
  });

  it('unset or empty: no tenant has upstreams of its own', () => {
    expect(dropInSettings(parseEnv({ DROPIN_TENANT_UPSTREAMS_FILE: '' })).tenantUpstreams).toEqual(new Map());
  });
});
