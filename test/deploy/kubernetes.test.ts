// deploy/kubernetes/: every document validated against the schema of its kind, the references between them, and
// the gateway configuration they carry read by the gateway's own loader (docs/kubernetes.md says what is checked).
//
// The schemas are kubernetes-models' validators, generated from Kubernetes' OpenAPI definitions and compiled with
// Ajv (no kubeconform or kubeval binary can be installed here). Like Kubernetes' schemas, they allow unknown
// fields; they check required fields, types, enums and formats.
import { execFile } from "node:child_process";
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse, parseAllDocuments } from "yaml";
import { ConfigMap, Secret, Service } from "kubernetes-models/v1";
import { Deployment, StatefulSet } from "kubernetes-models/apps/v1";
import { HorizontalPodAutoscaler } from "kubernetes-models/autoscaling/v2";
import { NetworkPolicy } from "kubernetes-models/networking.k8s.io/v1";
import { PodDisruptionBudget } from "kubernetes-models/policy/v1";
import { loadConfig } from "../../src/config/load.js";
import { parseStoreSpec } from "../../src/store/store-url.js";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const DIR = join(ROOT, "deploy/kubernetes");

type Manifest = Record<string, unknown> & { apiVersion: string; kind: string; metadata: { name: string } };

/** The validator of each kind the manifests use: `apiVersion/kind` → validate(document), throwing when invalid. */
const VALIDATORS: Record<string, (doc: Manifest) => void> = {
  "v1/ConfigMap": (d) => new ConfigMap(d).validate(),
  "v1/Secret": (d) => new Secret(d).validate(),
  "v1/Service": (d) => new Service(d).validate(),
  "apps/v1/Deployment": (d) => new Deployment(d).validate(),
  "apps/v1/StatefulSet": (d) => new StatefulSet(d).validate(),
  "autoscaling/v2/HorizontalPodAutoscaler": (d) => new HorizontalPodAutoscaler(d).validate(),
  "networking.k8s.io/v1/NetworkPolicy": (d) => new NetworkPolicy(d).validate(),
  "policy/v1/PodDisruptionBudget": (d) => new PodDisruptionBudget(d).validate(),
};

interface Loaded {
  file: string;
  doc: Manifest;
}

let docs: Loaded[] = [];
let scratch = "";

/** The one document of this kind and name. */
function find<T = Record<string, unknown>>(kind: string, name: string): T {
  const found = docs.find((d) => d.doc.kind === kind && d.doc.metadata.name === name);
  if (!found) throw new Error(`no ${kind} ${name} in deploy/kubernetes`);
  return found.doc as unknown as T;
}

beforeAll(async () => {
  scratch = await mkdtemp(join(tmpdir(), "k8s-"));
  const files = (await readdir(DIR)).filter((f) => f.endsWith(".yaml")).sort();
  for (const file of files) {
    for (const d of parseAllDocuments(await readFile(join(DIR, file), "utf8"))) {
      expect(d.errors, file).toEqual([]);
      docs.push({ file, doc: d.toJS() as Manifest });
    }
  }
});

afterAll(async () => {
  docs = [];
  await rm(scratch, { recursive: true, force: true });
});

interface Container {
  name: string;
  image: string;
  args?: string[];
  command?: string[];
  ports?: { name?: string; containerPort: number }[];
  env?: { name: string; valueFrom?: unknown }[];
  envFrom?: { secretRef?: { name: string } }[];
  livenessProbe?: { httpGet?: { path: string; port: string | number } };
  readinessProbe?: { httpGet?: { path: string; port: string | number } };
  startupProbe?: { httpGet?: { path: string; port: string | number } };
  volumeMounts?: { name: string; mountPath: string }[];
}

interface PodSpec {
  terminationGracePeriodSeconds?: number;
  securityContext?: { runAsNonRoot?: boolean; runAsUser?: number };
  initContainers?: Container[];
  containers: Container[];
  volumes?: { name: string; configMap?: { name: string } }[];
}

interface DeploymentDoc {
  metadata: { name: string };
  spec: {
    selector: { matchLabels: Record<string, string> };
    template: { metadata: { labels: Record<string, string> }; spec: PodSpec };
  };
}

function gatewayPod(): PodSpec {
  return find<DeploymentDoc>("Deployment", "mcp-task-gateway").spec.template.spec;
}

function gatewayContainer(): Container {
  const c = gatewayPod().containers.find((x) => x.name === "gateway");
  if (!c) throw new Error("no gateway container");
  return c;
}

function secretEnv(name: string): Record<string, string> {
  return find<{ stringData: Record<string, string> }>("Secret", name).stringData;
}

describe("the Kubernetes manifests", () => {
  it("hold a Deployment, Service, PodDisruptionBudget, HPA, ConfigMap, Secret and the Redis Sentinel example", () => {
    const kinds = new Set(docs.map((d) => `${d.doc.kind}/${d.doc.metadata.name}`));
    for (const k of [
      "Deployment/mcp-task-gateway",
      "Service/mcp-task-gateway",
      "PodDisruptionBudget/mcp-task-gateway",
      "HorizontalPodAutoscaler/mcp-task-gateway",
      "ConfigMap/mcp-task-gateway",
      "Secret/mcp-task-gateway",
      "NetworkPolicy/mcp-task-gateway",
      "StatefulSet/redis",
      "Service/redis",
      "Secret/redis",
    ])
      expect(kinds, k).toContain(k);
  });

  it("validate against Kubernetes' schema of their kind", () => {
    const problems: string[] = [];
    for (const { file, doc } of docs) {
      const validate = VALIDATORS[`${doc.apiVersion}/${doc.kind}`];
      if (!validate) {
        problems.push(`${file}: no schema for ${doc.apiVersion} ${doc.kind}`);
        continue;
      }
      try {
        validate(doc);
      } catch (err) {
        problems.push(`${file} ${doc.kind}/${doc.metadata.name}: ${(err as Error).message}`);
      }
    }
    expect(problems).toEqual([]);
  });

  it("a wrong type or a missing field is refused by the same validators (the check is not blind)", () => {
    const deployment = structuredClone(find<DeploymentDoc>("Deployment", "mcp-task-gateway"));
    const [container] = deployment.spec.template.spec.containers;
    (container?.ports?.[0] as { containerPort: unknown }).containerPort = "8642";
    expect(() => VALIDATORS["apps/v1/Deployment"]?.(deployment as unknown as Manifest)).toThrow(/containerPort/);
    const hpa = structuredClone(find<{ spec: Record<string, unknown> }>("HorizontalPodAutoscaler", "mcp-task-gateway"));
    delete hpa.spec.maxReplicas;
    expect(() => VALIDATORS["autoscaling/v2/HorizontalPodAutoscaler"]?.(hpa as unknown as Manifest)).toThrow(
      /maxReplicas/,
    );
  });

  it("select the gateway's pods by the template's labels, and scale the Deployment", () => {
    const deployment = find<DeploymentDoc>("Deployment", "mcp-task-gateway");
    const labels = deployment.spec.template.metadata.labels;
    expect(labels).toMatchObject(deployment.spec.selector.matchLabels);
    expect(labels).toMatchObject(
      find<{ spec: { selector: Record<string, string> } }>("Service", "mcp-task-gateway").spec.selector,
    );
    expect(labels).toMatchObject(
      find<{ spec: { selector: { matchLabels: Record<string, string> } } }>("PodDisruptionBudget", "mcp-task-gateway")
        .spec.selector.matchLabels,
    );
    expect(
      find<{ spec: { scaleTargetRef: unknown } }>("HorizontalPodAutoscaler", "mcp-task-gateway").spec.scaleTargetRef,
    ).toEqual({
      apiVersion: "apps/v1",
      kind: "Deployment",
      name: "mcp-task-gateway",
    });
  });

  it("probe /healthz and /readyz on the gateway's port, run it as non-root, and give it longer than its grace to stop", () => {
    const pod = gatewayPod();
    const gateway = gatewayContainer();
    const http = gateway.ports?.find((p) => p.name === "http");
    expect(http?.containerPort).toBe(8642);
    expect(gateway.livenessProbe?.httpGet).toEqual({ path: "/healthz", port: "http" });
    expect(gateway.startupProbe?.httpGet).toEqual({ path: "/healthz", port: "http" });
    expect(gateway.readinessProbe?.httpGet).toEqual({ path: "/readyz", port: "http" });
    expect(pod.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 10001 });
    expect(gateway.envFrom).toContainEqual({ secretRef: { name: "mcp-task-gateway" } });
    expect(pod.volumes).toContainEqual({ name: "config-template", configMap: { name: "mcp-task-gateway" } });
    const config = parse(
      find<{ data: Record<string, string> }>("ConfigMap", "mcp-task-gateway").data["gateway.yaml"] ?? "",
    ) as {
      server: { shutdownGraceMs: number };
    };
    expect((pod.terminationGracePeriodSeconds ?? 30) * 1000).toBeGreaterThan(config.server.shutdownGraceMs);
  });

  it("carry a gateway config that the gateway loads, once the init container has added the pod's advertiseUrl", async () => {
    const template = join(scratch, "template");
    const out = join(scratch, "config");
    await Promise.all([mkdir(template), mkdir(out)]);
    const data = find<{ data: Record<string, string> }>("ConfigMap", "mcp-task-gateway").data;
    await writeFile(join(template, "gateway.yaml"), data["gateway.yaml"] ?? "");
    // The init container's own script, run by node with its mount paths moved into the scratch folder.
    const init = gatewayPod().initContainers?.find((c) => c.name === "advertise");
    const script = (init?.command?.[3] ?? "")
      .replace("/etc/mcp-task-gateway-template/", `${template}/`)
      .replace("/etc/mcp-task-gateway/", `${out}/`);
    expect(init?.command?.slice(0, 3)).toEqual(["node", "--input-type=module", "-e"]);
    await new Promise<void>((resolve, reject) => {
      execFile(
        process.execPath,
        ["--input-type=module", "-e", script],
        { cwd: ROOT, env: { ...process.env, POD_IP: "10.1.2.3" } },
        (err) => (err ? reject(err) : resolve()),
      );
    });
    const configFile = join(out, "gateway.yaml");
    expect(gatewayContainer().args).toEqual(["--config", "/etc/mcp-task-gateway/gateway.yaml"]);
    const config = await loadConfig({ flags: {}, env: secretEnv("mcp-task-gateway"), configFile });
    expect(config.server).toMatchObject({
      host: "0.0.0.0",
      port: 8642,
      internalHost: "0.0.0.0",
      internalPort: 8643,
      advertiseUrl: "http://10.1.2.3:8643",
    });
    expect(Object.keys(config.upstreams ?? {}).sort()).toEqual(["everything", "github"]);
    expect(config.upstreams?.github?.headers.authorization).toBe("Bearer change-me-github-token");
    expect(config.tasks.store).toBe(secretEnv("mcp-task-gateway").MCP_GATEWAY_STORE);
  });

  it("name the Sentinels of the Redis example, with its master and password, in the store URL", () => {
    const store = secretEnv("mcp-task-gateway").MCP_GATEWAY_STORE ?? "";
    const spec = parseStoreSpec(store);
    expect(spec).toMatchObject({ kind: "redis", mode: "sentinel", db: 0, tls: false });
    expect(spec.kind === "redis" && spec.display).not.toContain(secretEnv("redis").REDIS_PASSWORD);
    expect(store).toContain(`:${secretEnv("redis").REDIS_PASSWORD}@`);
    expect(store).toMatch(/#mymaster$/);
    const redis = find<{ spec: { replicas: number; serviceName: string } }>("StatefulSet", "redis");
    const sentinels = Array.from(
      { length: redis.spec.replicas },
      (_, i) => `redis-${i}.${redis.spec.serviceName}:26379`,
    );
    expect(store).toContain(sentinels.join(","));
  });
});
