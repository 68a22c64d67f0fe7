/**
 * The deployment files as the tests read them: every YAML document (compose, Kubernetes,
 * Prometheus, Grafana provisioning), the Kubernetes resources each kustomization includes, the
 * apps the manifests start with the env vars each app's schema reads, and each container's
 * environment as compose or the kubelet would build it. `deployment.test.ts` asserts on these.
 */
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { EnvSchema } from '../../apps/api/src/env';
import { parseEnv as parseStubEnv } from '../../apps/llm-stub/src/env';
import { WorkerEnvSchema } from '../../apps/worker/src/env';

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
export const read = (path: string) => readFileSync(join(ROOT, path), 'utf8');

// ---------------------------------------------------------------------------------------------
// YAML

type Doc = Record<string, unknown>;
export type Obj = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

export function parseYamlFile(path: string): Doc[] {
  // `merge`: docker-compose.yml shares the image's build settings with `<<: *image`.
  const docs = parseAllDocuments(read(path), { merge: true });
  const list = Array.isArray(docs) ? docs : [docs];
  const errors = list.flatMap((d) => d.errors.map((e) => `${path}: ${e.message}`));
  if (errors.length > 0) throw new Error(errors.join('\n'));
  return list.map((d) => d.toJS() as Doc).filter((d) => d !== null);
}

export function filesUnder(dir: string, pattern: RegExp): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(join(ROOT, dir))) {
    const path = join(dir, entry);
    if (statSync(join(ROOT, path)).isDirectory()) out.push(...filesUnder(path, pattern));
    else if (pattern.test(entry)) out.push(path);
  }
  return out;
}

export const K8S_DIR = 'infra/k8s';
export const yamlFiles = [
  'docker-compose.yml',
  ...filesUnder(K8S_DIR, /\.ya?ml$/),
  ...filesUnder('infra/prometheus', /\.ya?ml$/),
  ...filesUnder('infra/grafana/provisioning', /\.ya?ml$/),
];

/** Every resource of a kustomization and of the kustomizations it includes. */
function kustomizationResources(dir: string): Array<{ file: string; doc: Obj }> {
  const [kustomization] = parseYamlFile(join(dir, 'kustomization.yaml')) as Obj[];
  return (kustomization!.resources as string[]).flatMap((entry) => {
    const path = join(dir, entry);
    if (existsSync(join(ROOT, path, 'kustomization.yaml'))) return kustomizationResources(path);
    return parseYamlFile(path).map((doc) => ({ file: path, doc: doc as Obj }));
  });
}

export const base = kustomizationResources(K8S_DIR);
export const monitoring = kustomizationResources(join(K8S_DIR, 'monitoring'));
export const k8s = [...base, ...monitoring].map((r) => r.doc);
export const ofKind = (kind: string) => k8s.filter((d) => d.kind === kind);
export const named = (kind: string, name: string) => {
  const found = ofKind(kind).find((d) => d.metadata?.name === name);
  if (!found) throw new Error(`no ${kind} ${name} in ${K8S_DIR}`);
  return found;
};

const compose = parseYamlFile('docker-compose.yml')[0] as Obj;
const services = compose.services as Record<string, Obj>;

// ---------------------------------------------------------------------------------------------
// The apps: which env vars each reads, which entry point runs it

type EnvSource = Record<string, string | undefined>;

/**
 * The variables a schema reads: parse a proxy and record every key it asks for. Follows the
 * schema however it is composed (objects, intersections with the LLM schema, refinements).
 */
function keysRead(parse: (source: EnvSource) => unknown): Set<string> {
  const keys = new Set<string>();
  const source = new Proxy({} as EnvSource, {
    get(_target, key) {
      if (typeof key === 'string' && /^[A-Z][A-Z0-9_]*$/.test(key)) keys.add(key);
      return undefined;
    },
  });
  try {
    parse(source);
  } catch {
    // Required variables are missing here by construction; the keys were read all the same.
  }
  return keys;
}

export interface App {
  name: string;
  parse(env: EnvSource): Record<string, unknown>;
  /** The port the app listens on with this environment. */
  port(env: EnvSource): number;
  keys: Set<string>;
}

export const APPS: Record<string, App> = {
  'apps/api/src/main.ts': {
    name: 'api',
    parse: (env) => EnvSchema.parse(env),
    port: (env) => EnvSchema.parse(env).PORT,
    keys: new Set(),
  },
  'apps/worker/src/main.ts': {
    name: 'worker',
    parse: (env) => WorkerEnvSchema.parse(env),
    port: (env) => WorkerEnvSchema.parse(env).PORT,
    keys: new Set(),
  },
  'apps/llm-stub/src/main.ts': {
    name: 'llm-stub',
    parse: (env) => parseStubEnv(env) as unknown as Record<string, unknown>,
    port: (env) => parseStubEnv(env).port,
    keys: new Set(),
  },
};
for (const app of Object.values(APPS)) app.keys = keysRead(app.parse);

/** The app a command line starts: `node --import tsx <entry>`, never npm. */
export function appOf(commandLine: string[], where: string): App {
  // Not npm, npx or the tsx CLI: each puts a process between the signal and node.
  expect(commandLine[0], `${where} runs node itself`).toBe('node');
  expect(commandLine.slice(1, 3), `${where} loads tsx in the node process`).toEqual(['--import', 'tsx']);
  const app = APPS[commandLine[3] ?? ''];
  if (!app) throw new Error(`${where} starts ${commandLine.join(' ')}: not a known app entry`);
  return app;
}

// ---------------------------------------------------------------------------------------------
// Environments as the manifests set them

/** Compose `${VAR:-default}` / `${VAR-default}` / `${VAR}` with nothing set in the shell. */
function composeValue(value: unknown): string | undefined {
  if (value === null || value === undefined) return undefined; // passed through from the shell
  return String(value).replace(
    /\$\{([A-Z0-9_]+)(?::?-([^}]*))?\}/g,
    (_m, _name, fallback?: string) => fallback ?? '',
  );
}

function composeEnv(service: Obj): { env: EnvSource; keys: string[] } {
  const raw = (service.environment ?? {}) as Record<string, unknown>;
  const env: EnvSource = {};
  for (const [key, value] of Object.entries(raw)) {
    const resolved = composeValue(value);
    if (resolved !== undefined) env[key] = resolved;
  }
  return { env, keys: Object.keys(raw) };
}

export function secretData(name: string): Record<string, string> {
  const secret = named('Secret', name);
  const decoded = Object.fromEntries(
    Object.entries((secret.data ?? {}) as Record<string, string>).map(([k, v]) => [
      k,
      Buffer.from(v, 'base64').toString('utf8'),
    ]),
  );
  return { ...decoded, ...((secret.stringData ?? {}) as Record<string, string>) };
}

const configMapData = (name: string) => (named('ConfigMap', name).data ?? {}) as Record<string, string>;

/**
 * A container's environment as the kubelet builds it from envFrom and env; `secrets` stands in
 * for Secrets as an operator would fill them (name → data), the manifests' own otherwise.
 */
export function containerEnv(
  container: Obj,
  secrets: Record<string, Record<string, string>> = {},
): EnvSource {
  const filledSecret = (name: string) => secrets[name] ?? secretData(name);
  const env: EnvSource = {};
  for (const from of (container.envFrom ?? []) as Obj[]) {
    if (from.configMapRef) Object.assign(env, configMapData(from.configMapRef.name));
    else if (from.secretRef) Object.assign(env, filledSecret(from.secretRef.name));
    else throw new Error(`unsupported envFrom ${JSON.stringify(from)}`);
  }
  for (const entry of (container.env ?? []) as Obj[]) {
    if ('value' in entry) {
      env[entry.name] = String(entry.value);
      continue;
    }
    const ref = entry.valueFrom?.secretKeyRef ?? entry.valueFrom?.configMapKeyRef;
    if (!ref) throw new Error(`unsupported env source for ${entry.name}`);
    const data = entry.valueFrom.secretKeyRef ? filledSecret(ref.name) : configMapData(ref.name);
    if (ref.key in data) env[entry.name] = data[ref.key];
    else if (!ref.optional) throw new Error(`${entry.name}: ${ref.name} has no key ${ref.key}`);
  }
  return env;
}

interface K8sContainer {
  where: string;
  deployment: Obj;
  pod: Obj;
  container: Obj;
  app: App;
  env: EnvSource;
}

export const deployments = ofKind('Deployment');
export const k8sContainers: K8sContainer[] = deployments.flatMap((deployment) =>
  ((deployment.spec.template.spec.containers ?? []) as Obj[]).map((container) => {
    const where = `Deployment ${deployment.metadata.name}/${container.name}`;
    expect(container.command, `${where} keeps the image's entrypoint (tini)`).toBeUndefined();
    return {
      where,
      deployment,
      pod: deployment.spec.template.spec as Obj,
      container,
      app: appOf(container.args as string[], where),
      env: containerEnv(container),
    };
  }),
);
export const k8sOf = (appName: string) => {
  const found = k8sContainers.find((c) => c.app.name === appName);
  if (!found) throw new Error(`no ${appName} container in ${K8S_DIR}`);
  return found;
};

export const composeApps = Object.entries(services)
  .filter(([, service]) => service.build)
  .map(([name, service]) => ({
    name,
    service,
    app: appOf(service.command as string[], `compose service ${name}`),
    ...composeEnv(service),
  }));
export const composeOf = (appName: string) => {
  const found = composeApps.find((s) => s.app.name === appName);
  if (!found) throw new Error(`no ${appName} service in docker-compose.yml`);
  return found;
};

// ---------------------------------------------------------------------------------------------
// The image

/** infra/docker/Dockerfile with its line continuations joined. */
export const dockerfile = read('infra/docker/Dockerfile').replace(/\\\n/g, ' ');

/**
 * The environment the image gives every process (`ENV` of its final stage): what a container
 * starts with before compose or the kubelet add theirs.
 */
export const imageEnv: EnvSource = (() => {
  const lines = dockerfile
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'));
  const finalStage = lines.slice(lines.findLastIndex((l) => /^FROM\s/i.test(l)));
  const env: EnvSource = {};
  for (const line of finalStage.filter((l) => /^ENV\s/i.test(l))) {
    for (const [, key, value = ''] of line.matchAll(/([A-Z_][A-Z0-9_]*)=("[^"]*"|\S*)/g))
      env[key!] = value.replace(/^"|"$/g, '');
  }
  return env;
})();
