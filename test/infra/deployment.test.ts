import { QueueKeys } from 'bullmq';
import Fastify from 'fastify';
import { serializerCompiler, validatorCompiler } from 'fastify-type-provider-zod';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLlmStub } from '@compactor/llm-stub';
import { JOB_NAMES, REDIS_CLOSE_TIMEOUT_MS, WAITS_IN } from '@compactor/queue';
import { parseDocument } from 'yaml';
import { EnvSchema, openStartRefusal } from '../../apps/api/src/env';
import { buildMetricsServer, createApiMetrics, registerMetrics } from '../../apps/api/src/http/metrics';
import type { ApiResources } from '../../apps/api/src/resources';
import { healthRoutes } from '../../apps/api/src/routes/health';
import { WorkerEnvSchema } from '../../apps/worker/src/env';
import { startProbeServer } from '../../apps/worker/src/http';
import {
  type App,
  base,
  composeApps,
  composeOf,
  containerEnv,
  deployments,
  filesUnder,
  imageEnv,
  k8s,
  K8S_DIR,
  k8sContainers,
  k8sOf,
  monitoring,
  named,
  type Obj,
  ofKind,
  parseYamlFile,
  read,
  secretData,
  yamlFiles,
} from './manifests';

/**
 * The deployment files (infra/docker, docker-compose.yml, infra/k8s, infra/prometheus,
 * infra/grafana/provisioning) against the code they run: env vars the apps read, probe routes
 * they serve, the queue keys BullMQ writes, the drain and LLM timeouts. No Docker or cluster is
 * needed: everything is parsed and compared here.
 */

// ---------------------------------------------------------------------------------------------
// The routes the processes serve, asked of the real route code

let workerProbes: Awaited<ReturnType<typeof startProbeServer>>;
let stub: Awaited<ReturnType<typeof startLlmStub>>;
/** The API's public port with /metrics on it (METRICS_PORT unset), and without it (set). */
const api = Fastify();
const apiWithoutMetrics = Fastify();
let apiMetricsPort: Awaited<ReturnType<typeof buildMetricsServer>>;

beforeAll(async () => {
  const resources = {
    db: { execute: async () => undefined },
    redis: { ping: async () => 'PONG' },
  } as unknown as ApiResources;
  const registry = createApiMetrics();
  for (const server of [api, apiWithoutMetrics]) {
    server.setValidatorCompiler(validatorCompiler);
    server.setSerializerCompiler(serializerCompiler);
    await server.register(healthRoutes(resources));
    registerMetrics(server, registry, { serve: server === api });
    await server.ready();
  }
  apiMetricsPort = await buildMetricsServer(registry);
  workerProbes = await startProbeServer(
    { ready: async () => undefined, registry: new Registry(), accepting: () => true },
    { port: 0, host: '127.0.0.1' },
  );
  stub = await startLlmStub({ port: 0, host: '127.0.0.1' });
});

afterAll(async () => {
  await api.close();
  await apiWithoutMetrics.close();
  await apiMetricsPort?.close();
  await new Promise((done) => workerProbes?.server.close(done));
  await stub?.close();
});

/**
 * The HTTP status the app's own route code answers `GET path` with on `port` (all dependencies
 * up), the app configured by `env`. Only the API has a second listener (METRICS_PORT).
 */
async function statusOf(
  app: App,
  path: string,
  port: number,
  env: Record<string, string | undefined>,
): Promise<number> {
  if (app.name === 'api') {
    const { PORT, METRICS_PORT } = EnvSchema.parse(env);
    const server =
      METRICS_PORT === undefined ? api : port === METRICS_PORT ? apiMetricsPort : apiWithoutMetrics;
    if (port !== PORT && port !== METRICS_PORT) throw new Error(`the API listens on no port ${port}`);
    return (await server.inject({ method: 'GET', url: path })).statusCode;
  }
  if (port !== app.port(env)) throw new Error(`${app.name} listens on no port ${port}`);
  const base =
    app.name === 'worker' ? `http://127.0.0.1:${workerProbes.port}` : stub.url.replace(/\/v1\/?$/, '');
  return (await fetch(base + path)).status;
}

/** Compose's `1m30s` / `150s` / `500ms` in milliseconds. */
function durationMs(value: string): number {
  const units: Record<string, number> = { h: 3_600_000, m: 60_000, s: 1_000, ms: 1, us: 0.001 };
  let total = 0;
  const rest = value.replace(/(\d+(?:\.\d+)?)(h|ms|m|s|us)/g, (_m, n: string, unit: string) => {
    total += Number(n) * units[unit]!;
    return '';
  });
  if (rest !== '' || total === 0) throw new Error(`not a duration: ${value}`);
  return total;
}

/** Variables node reads itself, beside the apps' env schemas. */
const NODE_READS = new Set(['NODE_OPTIONS']);

/** A Kubernetes quantity of memory (`512Mi`, `1Gi`) in MiB; 0 when unset. */
function mebibytes(quantity: string | undefined): number {
  if (!quantity) return 0;
  const match = /^(\d+)(Mi|Gi)$/.exec(quantity);
  if (!match) throw new Error(`unsupported memory quantity ${quantity}`);
  return Number(match[1]) * (match[2] === 'Gi' ? 1024 : 1);
}

/**
 * What a stopping worker may take after SIGTERM: SHUTDOWN_TIMEOUT_MS of drain, then 2 s for the
 * cancelled jobs (packages/queue/src/worker/workers.ts) and its bounded Redis closes.
 */
function workerStopMs(workerEnv: Record<string, unknown>): number {
  return (workerEnv.SHUTDOWN_TIMEOUT_MS as number) + 2_000 + 2 * REDIS_CLOSE_TIMEOUT_MS;
}

// ---------------------------------------------------------------------------------------------

describe('deployment manifests', () => {
  it('parse, and every Kubernetes file is part of a kustomization', () => {
    for (const file of yamlFiles) expect(() => parseYamlFile(file), file).not.toThrow();
    const listed = new Set([...base, ...monitoring].map((r) => r.file));
    const orphans = filesUnder(K8S_DIR, /\.ya?ml$/).filter(
      (f) => !f.endsWith('kustomization.yaml') && !listed.has(f),
    );
    expect(orphans).toEqual([]);
    for (const doc of k8s) {
      expect(doc.apiVersion, `${doc.kind} ${doc.metadata?.name}`).toBeTruthy();
      expect(doc.metadata?.name).toBeTruthy();
    }
    expect(k8sContainers.map((c) => c.app.name).sort()).toEqual(['api', 'worker']);
    expect(composeApps.map((s) => s.app.name).sort()).toEqual(['api', 'llm-stub', 'worker']);
  });

  it('run every container as a non-root user with resources and a read-only root', () => {
    for (const { where, pod, container } of k8sContainers) {
      const security = { ...pod.securityContext, ...container.securityContext } as Obj;
      expect(security.runAsNonRoot, where).toBe(true);
      expect(security.runAsUser, where).toBeGreaterThan(0);
      expect(security.allowPrivilegeEscalation, where).toBe(false);
      expect(security.capabilities?.drop, where).toContain('ALL');
      expect(pod.enableServiceLinks, `${where}: no injected service variables`).toBe(false);
      expect(container.resources?.requests?.cpu, where).toBeTruthy();
      expect(container.resources?.requests?.memory, where).toBeTruthy();
      expect(container.resources?.limits?.memory, where).toBeTruthy();
      if (security.readOnlyRootFilesystem) {
        // tsx writes its transform cache under $TMPDIR (/tmp in the image).
        const tmp = ((container.volumeMounts ?? []) as Obj[]).find((m) => m.mountPath === '/tmp');
        expect(tmp, `${where} mounts a writable /tmp`).toBeDefined();
        const volume = ((pod.volumes ?? []) as Obj[]).find((v) => v.name === tmp!.name);
        expect(volume?.emptyDir, `${where}: /tmp is an emptyDir`).toBeDefined();
      }
    }
  });

  it('probe paths the apps serve, on the port the app listens on', async () => {
    for (const { where, container, app, env } of k8sContainers) {
      const port = app.port(env);
      const ports = (container.ports ?? []) as Obj[];
      const probes = {
        readinessProbe: '/readyz',
        livenessProbe: '/healthz',
      } as const;
      for (const [probe, expected] of Object.entries(probes)) {
        const get = container[probe]?.httpGet as Obj | undefined;
        expect(get?.path, `${where} ${probe}`).toBe(expected);
      }
      for (const probe of ['readinessProbe', 'livenessProbe', 'startupProbe']) {
        const get = container[probe]?.httpGet as Obj | undefined;
        if (!get) continue;
        const target =
          typeof get.port === 'number' ? get.port : ports.find((p) => p.name === get.port)?.containerPort;
        expect(target, `${where} ${probe} port = the app's PORT`).toBe(port);
        expect(await statusOf(app, get.path as string, port, env), `${where} ${probe} ${get.path}`).toBe(200);
      }
    }
    for (const { name, service, app, env } of composeApps) {
      const test = service.healthcheck?.test as string[] | undefined;
      expect(test?.slice(0, 3), `compose ${name} healthcheck`).toEqual([
        'CMD',
        'node',
        'infra/docker/healthcheck.mjs',
      ]);
      const [path, port] = test!.slice(3);
      expect(Number(port), `compose ${name} healthcheck port`).toBe(app.port(env));
      expect(await statusOf(app, path!, Number(port), env), `compose ${name} healthcheck ${path}`).toBe(200);
    }
  });

  it('scrape paths the apps serve', async () => {
    for (const monitor of ofKind('ServiceMonitor')) {
      const service = ofKind('Service').find(
        (s) =>
          s.metadata.labels?.['app.kubernetes.io/name'] ===
          monitor.spec.selector.matchLabels['app.kubernetes.io/name'],
      );
      expect(service, monitor.metadata.name).toBeDefined();
      const container = k8sContainers.find(
        (c) =>
          c.deployment.spec.selector.matchLabels['app.kubernetes.io/name'] ===
          service!.spec.selector['app.kubernetes.io/name'],
      )!;
      for (const endpoint of monitor.spec.endpoints as Obj[]) {
        const servicePort = (service!.spec.ports as Obj[]).find((p) => p.name === endpoint.port);
        expect(servicePort, `${monitor.metadata.name} port ${endpoint.port}`).toBeDefined();
        const containerPort = ((container.container.ports ?? []) as Obj[]).find(
          (p) => p.name === servicePort!.targetPort || p.containerPort === servicePort!.targetPort,
        );
        expect(containerPort, `${monitor.metadata.name}: the Service reaches a container port`).toBeDefined();
        expect(
          await statusOf(container.app, endpoint.path as string, containerPort!.containerPort, container.env),
          `${monitor.metadata.name} ${endpoint.path} on ${containerPort!.containerPort}`,
        ).toBe(200);
      }
    }
  });

  it("keep the API's /metrics off the port its Service routes traffic to, on Kubernetes", async () => {
    const { app, env, container } = k8sOf('api');
    const { PORT, METRICS_PORT } = EnvSchema.parse(env);
    expect(METRICS_PORT, 'METRICS_PORT set in config.yaml').toBeDefined();
    expect(await statusOf(app, '/metrics', PORT, env)).toBe(404);
    expect(await statusOf(app, '/metrics', METRICS_PORT!, env)).toBe(200);
    const ports = (container.ports ?? []) as Obj[];
    expect(ports.find((p) => p.name === 'metrics')?.containerPort).toBe(METRICS_PORT);
  });

  it('scrape paths the apps serve in the compose stack (infra/prometheus)', async () => {
    const [config] = parseYamlFile('infra/prometheus/prometheus.yml') as Obj[];
    const targets = (config!.scrape_configs as Obj[]).flatMap((job) =>
      [
        ...((job.static_configs ?? []) as Obj[]).flatMap((c) => c.targets as string[]),
        ...((job.dns_sd_configs ?? []) as Obj[]).flatMap((c) =>
          (c.names as string[]).map((name) => `${name}:${c.port}`),
        ),
      ].map((target) => ({ job, target })),
    );
    expect(targets.map((t) => t.target.split(':')[0]).sort()).toEqual(['api', 'worker']);
    for (const { job, target } of targets) {
      const [service, port] = target.split(':');
      const composed = composeApps.find((s) => s.name === service);
      expect(composed, `${job.job_name}: compose service ${service}`).toBeDefined();
      expect(
        await statusOf(composed!.app, job.metrics_path as string, Number(port), composed!.env),
        `${job.job_name} ${target}${job.metrics_path}`,
      ).toBe(200);
    }
  });

  it('ship the Kubernetes API refusing to start until the operator sets API_KEYS or ALLOW_UNAUTHENTICATED', () => {
    const { container } = k8sOf('api');
    const shipped = secretData('compactor-secrets');
    // The shipped ADMIN_TOKEN is a placeholder, which a production API refuses outright; the
    // rest of this test sets a real one to look at the key check.
    expect(() => EnvSchema.parse({ ...imageEnv, ...containerEnv(container) })).toThrow(
      /ADMIN_TOKEN is a placeholder/,
    );
    const adminToken = '9c1f0e7a3b5d42c68e0a1b2c3d4e5f60';
    // The container's environment: the image's (NODE_ENV=production), then the manifests'.
    const started = (data: Record<string, string> = shipped) => {
      const secrets = { 'compactor-secrets': { ...data, ADMIN_TOKEN: adminToken } };
      const env = EnvSchema.parse({ ...imageEnv, ...containerEnv(container, secrets) });
      expect(env.NODE_ENV).toBe('production');
      // A fresh install: no key in the keys table yet.
      return openStartRefusal(env, false);
    };
    const refusal = started();
    expect(refusal, 'as shipped').toMatch(/API_KEYS/);
    expect(refusal, 'as shipped').toMatch(/ALLOW_UNAUTHENTICATED/);

    expect(started({ ...shipped, API_KEYS: 'acme:0123456789abcdef' })).toBeNull();
    // The other choice, as secret.yaml offers it: its commented ALLOW_UNAUTHENTICATED line.
    const text = read(`${K8S_DIR}/secret.yaml`);
    expect(text).toMatch(/^\s*#\s*ALLOW_UNAUTHENTICATED: 'true'$/m);
    const chosen = parseDocument(
      text.replace(/^(\s*)#\s*(ALLOW_UNAUTHENTICATED: 'true')$/m, '$1$2'),
    ).toJS() as Obj;
    expect(chosen.stringData.ALLOW_UNAUTHENTICATED).toBe('true');
    const open = { 'compactor-secrets': chosen.stringData as Record<string, string> };
    expect(started(open['compactor-secrets'])).toBeNull();
    expect(
      Object.keys(containerEnv(container, open)).filter(
        (key) => !k8sOf('api').app.keys.has(key) && !NODE_READS.has(key),
      ),
    ).toEqual([]);
  });

  it('start the compose API (the local demo stack) open, on purpose', () => {
    const { env } = composeOf('api');
    const parsed = EnvSchema.parse({ ...imageEnv, ...env });
    expect(parsed.NODE_ENV).toBe('production');
    expect(parsed.ALLOW_UNAUTHENTICATED).toBe(true);
    expect(openStartRefusal(parsed, false)).toBeNull();
  });

  it("size V8's heap to the container's memory limit", () => {
    for (const { where, container, env } of k8sContainers) {
      const limit = mebibytes(container.resources?.limits?.memory as string | undefined);
      expect(limit, `${where} has a memory limit`).toBeGreaterThan(0);
      const heap = Number(/--max-old-space-size=(\d+)/.exec(env.NODE_OPTIONS ?? '')?.[1]);
      // Unset, V8 sizes the heap from the node's memory and lets garbage grow past the limit.
      expect(heap, `${where} NODE_OPTIONS --max-old-space-size`).toBeGreaterThan(0);
      expect(heap, `${where}: the heap leaves room for buffers, stacks and code`).toBeLessThanOrEqual(
        (limit * 2) / 3,
      );
    }
  });

  it('set only variables the apps read, and everything they require', () => {
    const sets = [
      ...k8sContainers.map((c) => ({ where: c.where, app: c.app, env: c.env, keys: Object.keys(c.env) })),
      ...composeApps.map((s) => ({ where: `compose ${s.name}`, app: s.app, env: s.env, keys: s.keys })),
    ];
    for (const { where, app, env, keys } of sets) {
      expect(
        keys.filter((key) => !app.keys.has(key) && !NODE_READS.has(key)),
        `${where}: variables ${app.name}'s env schema does not read`,
      ).toEqual([]);
      expect(() => app.parse(env), where).not.toThrow();
      // In a container the defaults (127.0.0.1, local Postgres and Redis) are always wrong.
      expect(env.HOST, `${where} listens beyond loopback`).toBe('0.0.0.0');
      expect(env.PORT, `${where} has a fixed port`).toBeTruthy();
      if (app.name !== 'llm-stub') {
        expect(env.DATABASE_URL, `${where} DATABASE_URL`).toBeTruthy();
        expect(env.REDIS_URL, `${where} REDIS_URL`).toBeTruthy();
      }
    }
    // The API and the workers share the queues and the event channels.
    for (const prefixOf of [(appName: string) => k8sOf(appName), (appName: string) => composeOf(appName)]) {
      const apiEnv = EnvSchema.parse(prefixOf('api').env);
      const workerEnv = WorkerEnvSchema.parse(prefixOf('worker').env);
      expect(apiEnv.QUEUE_PREFIX).toBe(workerEnv.QUEUE_PREFIX);
      expect(apiEnv.TOKENIZER_ENCODING).toBe(workerEnv.TOKENIZER_ENCODING);
    }
  });

  it('give a stopping worker longer than its drain and than one LLM call', () => {
    const worker = k8sOf('worker');
    const env = WorkerEnvSchema.parse(worker.env);
    const graceMs = (worker.pod.terminationGracePeriodSeconds as number) * 1000;
    expect(graceMs, 'terminationGracePeriodSeconds > LLM_TIMEOUT_MS').toBeGreaterThan(env.LLM_TIMEOUT_MS);
    expect(graceMs, 'terminationGracePeriodSeconds > the whole drain').toBeGreaterThan(workerStopMs(env));
    // The drain itself lets a running LLM call finish instead of cancelling it.
    expect(env.SHUTDOWN_TIMEOUT_MS, 'SHUTDOWN_TIMEOUT_MS > LLM_TIMEOUT_MS').toBeGreaterThan(
      env.LLM_TIMEOUT_MS,
    );

    const composed = composeOf('worker');
    const composeEnvParsed = WorkerEnvSchema.parse(composed.env);
    const stopMs = durationMs(String(composed.service.stop_grace_period ?? '10s'));
    expect(stopMs, 'compose stop_grace_period > the whole drain').toBeGreaterThan(
      workerStopMs(composeEnvParsed),
    );
    expect(stopMs, 'compose stop_grace_period > LLM_TIMEOUT_MS').toBeGreaterThan(
      composeEnvParsed.LLM_TIMEOUT_MS,
    );
    // Scalable: no fixed host port that a second replica would collide on.
    expect(composed.service.ports, 'compose worker publishes no host port').toBeUndefined();
  });

  it('scale workers on the keys BullMQ keeps the waiting jobs in', () => {
    const worker = k8sOf('worker');
    const prefix = WorkerEnvSchema.parse(worker.env).QUEUE_PREFIX;
    const waitKeys = JOB_NAMES.map((name) => new QueueKeys(prefix).getKeys(name)[WAITS_IN[name]]);
    const [scaled, ...more] = ofKind('ScaledObject');
    expect(more).toEqual([]);
    expect(scaled!.spec.scaleTargetRef.name).toBe(worker.deployment.metadata.name);
    expect(worker.deployment.spec.replicas, 'KEDA owns the worker replica count').toBeUndefined();
    // The workers also run the reconciler and promote delayed retries: never zero of them.
    expect(scaled!.spec.minReplicaCount).toBeGreaterThanOrEqual(1);
    expect(scaled!.spec.maxReplicaCount).toBeGreaterThan(scaled!.spec.minReplicaCount);
    expect(scaled!.spec.cooldownPeriod).toBeGreaterThan(0);
    const triggers = scaled!.spec.triggers as Obj[];
    expect(triggers.map((t) => t.type)).toEqual(triggers.map(() => 'redis'));
    expect(triggers.map((t) => t.metadata.listName).sort()).toEqual([...waitKeys].sort());
    for (const trigger of triggers) {
      expect(Number(trigger.metadata.listLength)).toBeGreaterThan(0);
      const auth = named('TriggerAuthentication', trigger.authenticationRef.name);
      for (const ref of auth.spec.secretTargetRef as Obj[])
        expect(secretData(ref.name)).toHaveProperty(ref.key);
    }
  });

  it('disrupt the API and the workers one pod at a time', () => {
    const budgets = ofKind('PodDisruptionBudget');
    for (const deployment of deployments) {
      const labels = deployment.spec.selector.matchLabels as Record<string, string>;
      const budget = budgets.find((b) =>
        Object.entries(b.spec.selector.matchLabels as Record<string, string>).every(
          ([k, v]) => labels[k] === v,
        ),
      );
      expect(budget, `a PodDisruptionBudget for ${deployment.metadata.name}`).toBeDefined();
    }
    expect(named('Deployment', 'compactor-api').spec.replicas).toBeGreaterThanOrEqual(2);
  });
});
