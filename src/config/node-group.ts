// One node group's validation and normalisation: the node-group schema's check, then what a
// schema cannot say (unique names, parent roles, rule expressions that compile, the platform's
// own rules, moved Terraform settings), then its decoded form (node-group-schema.ts: durations in
// milliseconds) with the defaults that depend on other fields. The config file's groups (load.ts)
// and the admin API's (src/nodegroups/registry.ts) go through it alike.
import { decoded, durationMs, NodeGroupConfig, type NodeGroupConfigInput } from './node-group-schema.js';
import type { NodeGroup } from './types.js';
import { readablePath } from '../schemas/json-pointer.js';
import { compile, type FieldError } from '../schemas/validate.js';
import { BACKEND_SERVES, CLIENT_PROTOCOLS, type ClientProtocol, LOAD_METRIC, type Role } from '../domain/vocabulary.js';
import { compileExpression, ExpressionError, type Kind } from '../policy/expressions/compile.js';
import { ruleKey } from '../domain/scaling.js';
import { outboundUrlProblem } from '../policy/outbound-url.js';
import { NetnsPlanError, netnsPlan } from '../policy/network/netns-plan.js';
import { SECRET_PLACEHOLDER } from './secrets.js';
import { scheduleProblem } from '../policy/scaling/schedules.js';
import { MODULE_NAME, terraformProblems, type TerraformModules } from '../policy/terraform/requests.js';

const groupChecker = compile<NodeGroupConfigInput>(NodeGroupConfig);

/** The roles a client protocol is for: publishers reach origins (and RTMP transcoders), viewers edges, relays and origins. */
const SERVABLE: Record<ClientProtocol, readonly Role[]> = {
  rtmp: ['origin', 'edge', 'relay', 'transcoder'],
  whip: ['origin', 'transcoder'],
  whep: ['origin', 'edge', 'relay'],
};

/** Settings a node group once had and no longer may (README.md, "The Terraform platform"). */
const MOVED: ReadonlyArray<[string, string]> = [
  ['binary', "the Terraform CLI is the operator's: set terraform.binary at the config file's top level, or SWITCHYARD_TERRAFORM_BIN"],
  ['provider', "the provider is the module's own (its required_providers), or the operator's choice in terraform.modules.<module>.provider"],
  ['providerSource', "the provider's source is the module's own (its required_providers)"],
];

/**
 * Validates one node group (from the config file or the admin API) and returns it as the service
 * runs on it. Errors carry paths relative to the group. With the catalog of installed Terraform
 * modules, a terraform group's module, variables and provider settings are checked against it
 * (the admin API always passes it; the config file's groups are checked by terraformConfigProblems
 * once the modules are read). `stored`: a group from LMDB, written by an older version, whose
 * moved settings are dropped (never used) rather than refused.
 */
export function normalizeNodeGroup(raw: unknown, modules?: TerraformModules, options: { stored?: boolean; metrics?: ReadonlySet<string> } = {}): { group: NodeGroup } | { errors: FieldError[] } {
  const input = structuredClone(raw);
  groupChecker.withDefaults(input);
  if (!groupChecker.check(input)) return { errors: groupChecker.explain(input) };
  if (options.stored) for (const [field] of MOVED) delete (input.platform.terraform as Record<string, unknown>)[field];
  // A role's unset serves: what its local backend serves (docs/webrtc.md, "What a group serves"), checked with the rest.
  const served = servedByBackend(input);
  for (const [role, roleOptions] of Object.entries(input.roles) as Array<[Role, (typeof input.roles)[Role]]>) {
    if (roleOptions && roleOptions.serves === undefined && served?.[role]) roleOptions.serves = [...served[role]];
  }
  const errors = groupProblems(input, modules, options.metrics);
  if (errors.length > 0) return { errors };
  const group = decoded(NodeGroupConfig, input);
  return {
    group: {
      ...group,
      // A rule's unset rank, cooldown and budget come from its role, the group's timing and its increment.
      rules: group.rules.map((r) => ({ ...r, rank: r.rank ?? LOAD_METRIC[r.role], cooldown: r.cooldown ?? group.timing.cooldown, requestBudget: r.requestBudget ?? r.increment })),
    },
  };
}

/** What the group's local backend serves per role, where it is known. */
function servedByBackend(input: NodeGroupConfigInput): Record<Role, readonly ClientProtocol[]> | undefined {
  return input.platform.type === 'local' ? BACKEND_SERVES[input.platform.local.backend] : undefined;
}

const TERRAFORM_IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_-]*$/;

/** What the schema cannot say about a group it passed: names, cross-references, expressions, the platform's own rules. */
function groupProblems(input: NodeGroupConfigInput, modules: TerraformModules | undefined, metrics: ReadonlySet<string> | undefined): FieldError[] {
  const errors: FieldError[] = [];
  const err = (pointer: string, message: string) => errors.push({ pointer, message, path: readablePath(pointer) });

  for (const [field, where] of MOVED) {
    if (Object.hasOwn(input.platform.terraform, field)) err(`/platform/terraform/${field}`, `is not a node group's setting: ${where}`);
  }
  const module = input.platform.terraform.module;
  if (module.includes('/') || module.startsWith('.')) {
    err('/platform/terraform/module', "is a path: a node group names an installed module (aws, digitalocean, local, or one in the operator's terraform.modulesDir, SWITCHYARD_TERRAFORM_MODULES)");
  } else if (!MODULE_NAME.test(module)) {
    err('/platform/terraform/module', 'must be the name of an installed module: letters, digits, _ and -, starting with a letter or digit');
  }

  const regions = new Set<string>();
  input.regions.forEach((r, i) => {
    if (regions.has(r.name)) err(`/regions/${i}/name`, 'another region has this name');
    regions.add(r.name);
    // Each region becomes a Terraform module (nodes_<region>) and a provider alias (<region>).
    if (input.platform.type === 'terraform' && !TERRAFORM_IDENTIFIER.test(r.name)) {
      err(`/regions/${i}/name`, 'on the terraform platform, must be a Terraform identifier: letters, digits, _ and -, starting with a letter or _');
    }
  });

  const roles = input.roles;
  const configured = Object.entries(roles) as Array<[Role, (typeof roles)[Role]]>;
  const allowedParents: Record<Role, readonly Role[]> = { origin: [], transcoder: [], relay: ['origin'], edge: ['origin', 'relay'] };
  for (const [role, options] of configured) {
    const parent = options?.parentRole;
    if (parent === undefined) {
      if (role === 'edge' || role === 'relay') err(`/roles/${role}`, `a ${role} needs a parentRole (${allowedParents[role].join(' or ')})`);
      continue;
    }
    if (!allowedParents[role].includes(parent)) {
      err(`/roles/${role}/parentRole`, allowedParents[role].length === 0 ? `a ${role} has no parent` : `must be ${allowedParents[role].join(' or ')}`);
    } else if (roles[parent] === undefined) {
      err(`/roles/${role}/parentRole`, `role '${parent}' is not configured in this node group`);
    }
  }

  const seen = new Set<string>();
  input.rules.forEach((r, i) => {
    if (!regions.has(r.region)) err(`/rules/${i}/region`, `must name one of the group's regions (${[...regions].join(', ')})`);
    if (roles[r.role] === undefined) err(`/rules/${i}/role`, `role '${r.role}' is not configured in this node group`);
    const key = ruleKey(r);
    if (seen.has(key)) err(`/rules/${i}`, `another rule is for region '${r.region}' and role '${r.role}'`);
    seen.add(key);
    if (r.min > r.max) err(`/rules/${i}/min`, `must not be above max (${r.max})`);
    const expressions: Array<[string, string | undefined, Kind]> = [
      ['rank', r.rank ?? LOAD_METRIC[r.role], 'rank'],
      ['limit', typeof r.limit === 'string' ? r.limit : undefined, 'limit'],
      ['scaleOut', r.scaleOut, 'condition'],
      ['scaleIn', r.scaleIn, 'condition'],
    ];
    for (const [field, source, kind] of expressions) {
      if (source === undefined) continue;
      try {
        compileExpression(source, kind, metrics ? { known: metrics } : {});
      } catch (e) {
        if (!(e instanceof ExpressionError)) throw e;
        err(`/rules/${i}/${field}`, `${e.reason} (at column ${e.position + 1})`);
      }
    }
  });

  const ids = new Set<string>();
  input.platform.static.nodes.forEach((n, i) => {
    if (ids.has(n.id)) err(`/platform/static/nodes/${i}/id`, 'another static node has this id');
    ids.add(n.id);
    if (!regions.has(n.region)) err(`/platform/static/nodes/${i}/region`, `must name one of the group's regions (${[...regions].join(', ')})`);
    if (roles[n.role] === undefined) err(`/platform/static/nodes/${i}/role`, `role '${n.role}' is not configured in this node group`);
  });
  if (input.platform.type === 'static' && input.platform.static.nodes.length === 0) {
    err('/platform/static/nodes', 'a static node group lists its nodes');
  }

  const local = input.platform.local;
  if (input.platform.type === 'local' && local.backend === 'nginx-rtmp') {
    // Real nodes serve what nginx-rtmp serves; an answer naming another listener would send clients nowhere.
    if (local.port === 0) err('/platform/local/port', 'nginx-rtmp nodes listen on a fixed port (each node has its own address): give one, e.g. 1935');
    if (local.statPort === local.port) err('/platform/local/statPort', `must differ from platform.local.port (${local.port})`);
    for (const [role, options] of configured) {
      for (const kind of ['publish', 'subscribe'] as const) {
        const protocol = options?.[kind]?.protocol;
        if (protocol !== undefined && protocol !== 'rtmp') err(`/roles/${role}/${kind}/protocol`, 'nginx-rtmp nodes take rtmp only');
      }
    }
  }

  if (input.platform.type === 'local' && local.backend === 'janus') {
    // The first node's namespace plan: a subnet Janus nodes can use, and loopback addresses that map into it.
    try {
      netnsPlan('check', local.firstAddress, local.janus.subnet);
    } catch (e) {
      err(e instanceof NetnsPlanError && e.message.startsWith('subnet') ? '/platform/local/janus/subnet' : '/platform/local/firstAddress', (e as Error).message);
    }
  }

  // What each role serves (docs/webrtc.md, "What a group serves"): what the local backend serves
  // unless the group says less; a declaration the backend cannot keep, or a listener that says
  // otherwise, is refused, so that lookups and the WebRTC proxy never send a client to a node
  // that cannot take it.
  const backendServes = servedByBackend(input);
  for (const [role, options] of configured) {
    if (!options) continue;
    const can = backendServes?.[role];
    if (options.serves !== undefined && can) {
      const what = can.length > 0 ? can.join(' and ') : 'nothing a client takes';
      for (const [i, p] of options.serves.entries()) if (!can.includes(p)) err(`/roles/${role}/serves/${i}`, `${local.backend} ${role}s serve ${what}, not ${p}`);
    }
    options.serves?.forEach((p, i) => {
      if (!SERVABLE[p].includes(role)) err(`/roles/${role}/serves/${i}`, `${p} is for ${SERVABLE[p].join(' and ')} roles`);
    });
    // A role whose nodes would serve nothing never comes into service: no rule may ask for one.
    if (can && can.length === 0) {
      input.rules.forEach((r, i) => {
        if (r.role === role && r.max > 0) err(`/rules/${i}/max`, `${local.backend} ${role}s serve nothing a client takes (docs/webrtc.md): must be 0`);
      });
    }
    for (const kind of ['publish', 'subscribe'] as const) {
      const protocol = options[kind]?.protocol;
      if (options.serves && protocol !== undefined && (CLIENT_PROTOCOLS as readonly string[]).includes(protocol) && !options.serves.includes(protocol as ClientProtocol)) {
        err(`/roles/${role}/${kind}/protocol`, `${protocol} is not among what the role serves (${options.serves.join(', ') || 'nothing'})`);
      }
    }
  }

  const scheduleNames = new Set<string>();
  input.schedules.forEach((s, i) => {
    const at = `/schedules/${i}`;
    if (scheduleNames.has(s.name)) err(`${at}/name`, 'another schedule has this name');
    scheduleNames.add(s.name);
    const why = scheduleProblem(s.cron, s.timezone);
    if (why) err(`${at}/${why.field}`, why.message);
    const duration = durationMs(s.duration);
    if (duration < 60_000 || duration > 31 * 86_400_000) err(`${at}/duration`, 'must be between 1 minute and 31 days');
    if (s.region !== undefined && !regions.has(s.region)) err(`${at}/region`, `must name one of the group's regions (${[...regions].join(', ')})`);
    if (!input.rules.some((r) => r.role === s.role && (s.region === undefined || r.region === s.region)))
      err(`${at}/role`, `the group has no rule for ${s.role}${s.region ? ` in ${s.region}` : ''} for it to change`);
    if (s.min === undefined && s.max === undefined) err(at, 'sets neither min nor max');
  });

  const admission = input.admission;
  const tokenTtl = durationMs(admission.tokenTtl);
  if (tokenTtl < 1000 || tokenTtl > 3600_000) err('/admission/tokenTtl', 'must be between 1s and 1h: a token is for connecting now, not for later');
  if (admission.webhook) {
    const why = outboundUrlProblem(admission.webhook.url, { allowLinkLocal: admission.webhook.allowLinkLocal });
    if (why) err('/admission/webhook/url', why);
    if (admission.webhook.secret === SECRET_PLACEHOLDER) err('/admission/webhook/secret', 'is the marker the API shows in place of a secret: there is no stored one to keep here; send the secret');
    if (durationMs(admission.webhook.timeout) > 30_000) err('/admission/webhook/timeout', 'must be at most 30s: a lookup waits for it');
  }

  const tf = input.platform.terraform;
  for (const [where, map] of [
    ['providerSettings', tf.providerSettings],
    ['regionVariables', tf.regionVariables],
  ] as const) {
    for (const region of Object.keys(map)) if (!regions.has(region)) err(`/platform/terraform/${where}/${region}`, `names no region of the group (${[...regions].join(', ')})`);
  }
  if (input.platform.type === 'terraform' && modules && errors.length === 0) {
    for (const e of terraformProblems(tf, [...regions], modules)) err(e.pointer, e.message);
  }

  return errors;
}
