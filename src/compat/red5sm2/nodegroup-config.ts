// SM2's NodeGroupConfig ⇄ our node group (docs/migrating-from-red5-sm2.md). SM2 keys roles and
// sub-groups (our regions) by name and gives each sub-group a scale rule per role; its field names
// map onto ours one for one:
//
//   groups | subGroups          → regions (no coordinates: lat/lon 0, so the configured order)
//   roles[].parentRoleName      → roles.<role>.parentRole
//   rulesByRole[].min, max      → rules[].min, max (SM2's installer sends them as strings)
//   increment                   → increment
//   outExpression, inExpression → scaleOut, scaleIn
//   capacityRankingExpression   → rank
//   capacityLimitExpression     → limit (a number, or an expression; 0, SM2's "no limit", our default)
//
// Its cloud fields (cloudPlatform, images, cloudProperties, propertyOverrides, …) name another
// product's resources: accepted and set aside; the group runs on compat.red5sm2.platform. Our
// normalizeNodeGroup checks the result, and its complaints are told with SM2's paths. Pure.
import Type, { type Static } from 'typebox';
import type { NodeGroup } from '../../config/types.js';
import { NAME_MAX, NAME_PATTERN, ROLES, type Role } from '../../domain/vocabulary.js';

/** What a role can do, as SM2's NodeGroupConfig names it (a relay can do none of these). */
const CAPABILITIES: Record<Role, readonly ('PUBLISH' | 'SUBSCRIBE' | 'TRANSCODE')[]> = { origin: ['PUBLISH'], edge: ['SUBSCRIBE'], relay: [], transcoder: ['TRANSCODE'] };

const Text = (max = 1024) => Type.String({ maxLength: max });
const Count = Type.Union([Type.Integer({ minimum: 0, maximum: 1024 }), Type.String({ pattern: '^[0-9]{1,4}$' })], {
  description: 'a whole number 0–1024, or the same as a string',
});
const Expression = Type.String({ minLength: 1, maxLength: 512 });

const ScaleRule = Type.Object(
  {
    nodeGroupName: Type.Optional(Text(64)),
    subGroupName: Type.Optional(Text(64)),
    nodeRoleName: Type.Optional(Text(64)),
    min: Count,
    max: Count,
    increment: Type.Optional(Count),
    outExpression: Type.Optional(Expression),
    inExpression: Type.Optional(Expression),
    capacityRankingExpression: Type.Optional(Expression),
    capacityLimitExpression: Type.Optional(Expression),
  },
  { additionalProperties: false },
);

const RoleConfig = Type.Object(
  {
    name: Type.Optional(Text(64)),
    imageName: Type.Optional(Text(256)),
    parentRoleName: Type.Optional(Text(64)),
    parentCardinality: Type.Optional(Text(32)),
    capabilities: Type.Optional(Type.Array(Text(32), { maxItems: 16 })),
    capacity: Type.Optional(Type.Number()),
    cloudProperties: Type.Optional(Text()),
    propertyOverrides: Type.Optional(Type.Array(Type.Unknown(), { maxItems: 64 })),
    initScripts: Type.Optional(Type.Array(Text(), { maxItems: 16 })),
  },
  { additionalProperties: false },
);

const SubGroup = Type.Object(
  {
    subGroupName: Type.Optional(Type.String({ pattern: NAME_PATTERN, maxLength: NAME_MAX, description: 'a region name: 1–32 characters of [A-Za-z0-9._-], a dot only between two other characters' })),
    nodeGroupName: Type.Optional(Text(64)),
    groupType: Type.Optional(Text(32)),
    cloudProperties: Type.Optional(Text()),
    rulesByRole: Type.Record(Type.String({ maxLength: 64 }), ScaleRule, { maxProperties: 8 }),
  },
  { additionalProperties: false },
);

const SubGroups = Type.Record(Type.String({ pattern: NAME_PATTERN, maxLength: NAME_MAX }), SubGroup, { minProperties: 1, maxProperties: 64, description: 'sub-groups (regions) by name' });

export const NodeGroupConfig = Type.Object(
  {
    name: Type.String({ pattern: NAME_PATTERN, maxLength: NAME_MAX, description: 'node group name: 1–32 characters of [A-Za-z0-9._-], a dot only between two other characters' }),
    description: Type.Optional(Text()),
    cloudPlatform: Type.Optional(Text(32)),
    cloudProperties: Type.Optional(Text()),
    isScalingPaused: Type.Optional(Type.Boolean()),
    internalVersionCount: Type.Optional(Type.Integer()),
    shuffleSizeExpression: Type.Optional(Text(512)),
    images: Type.Optional(Type.Record(Type.String({ maxLength: 256 }), Type.Unknown(), { maxProperties: 16 })),
    roles: Type.Record(Type.String({ maxLength: 64 }), RoleConfig, { minProperties: 1, maxProperties: 8 }),
    groups: Type.Optional(SubGroups),
    /** What SM2's documentation calls `groups`. */
    subGroups: Type.Optional(SubGroups),
  },
  { additionalProperties: false },
);
export type NodeGroupConfig = Static<typeof NodeGroupConfig>;

type Problem = { path: string; message: string };

/** Our node group spec (unchecked: normalizeNodeGroup checks it) and how to tell its errors in SM2's terms. */
export interface Translation {
  spec: Record<string, unknown>;
  /** An error path of ours (`rules[2].scaleOut`) as SM2's (`groups.us-east.rulesByRole.edge.outExpression`). */
  pathOf(ours: string): string;
}

const RULE_FIELDS: Record<string, string> = {
  min: 'min',
  max: 'max',
  increment: 'increment',
  scaleOut: 'outExpression',
  scaleIn: 'inExpression',
  rank: 'capacityRankingExpression',
  limit: 'capacityLimitExpression',
  role: 'nodeRoleName',
  region: 'subGroupName',
};

const count = (v: number | string | undefined) => (v === undefined ? undefined : Number(v));

/** A limit: a plain number stays one (0 and below: SM2's "no limit", so ours by default); else an expression. */
function limitOf(text: string | undefined): number | string | undefined {
  if (text === undefined) return undefined;
  if (!/^\s*[0-9]+(\.[0-9]+)?\s*$/.test(text)) return text;
  const n = Number(text);
  return n > 0 ? n : undefined;
}

export function toOurs(config: NodeGroupConfig, platform: unknown): { ok: true; translation: Translation } | { ok: false; errors: Problem[] } {
  const errors: Problem[] = [];
  const key = config.groups ? 'groups' : 'subGroups';
  const groups = config.groups ?? config.subGroups;
  if (config.groups && config.subGroups) errors.push({ path: 'body.subGroups', message: 'give the sub-groups once, as groups or as subGroups' });
  if (!groups) errors.push({ path: 'body.groups', message: 'is required: the sub-groups (regions) and their rules' });

  const roles: Record<string, { parentRole?: string }> = {};
  const roleKeys = new Map<string, string>();
  for (const [k, r] of Object.entries(config.roles)) {
    const name = r.name ?? k;
    if (!(ROLES as readonly string[]).includes(name)) {
      errors.push({ path: `body.roles.${k}`, message: `must be one of ${ROLES.join(', ')}: other roles (mixers, …) are not covered` });
      continue;
    }
    if (r.name !== undefined && r.name !== k) errors.push({ path: `body.roles.${k}.name`, message: `must be the role's key ('${k}')` });
    roles[name] = r.parentRoleName !== undefined ? { parentRole: r.parentRoleName } : {};
    roleKeys.set(name, k);
  }

  const regions: Array<{ name: string; lat: number; lon: number }> = [];
  const rules: Array<Record<string, unknown>> = [];
  const rulePaths: string[] = [];
  const regionPaths: string[] = [];
  for (const [k, g] of Object.entries(groups ?? {})) {
    if (g.subGroupName !== undefined && g.subGroupName !== k) errors.push({ path: `body.${key}.${k}.subGroupName`, message: `must be the sub-group's key ('${k}')` });
    if (g.nodeGroupName !== undefined && g.nodeGroupName !== config.name) errors.push({ path: `body.${key}.${k}.nodeGroupName`, message: `must be the node group's name ('${config.name}')` });
    regions.push({ name: k, lat: 0, lon: 0 });
    regionPaths.push(`${key}.${k}`);
    for (const [roleKey, r] of Object.entries(g.rulesByRole)) {
      const at = `body.${key}.${k}.rulesByRole.${roleKey}`;
      if (r.nodeRoleName !== undefined && r.nodeRoleName !== roleKey) errors.push({ path: `${at}.nodeRoleName`, message: `must be the rule's key ('${roleKey}')` });
      if (r.subGroupName !== undefined && r.subGroupName !== k) errors.push({ path: `${at}.subGroupName`, message: `must be the sub-group's key ('${k}')` });
      const limit = limitOf(r.capacityLimitExpression);
      rules.push({
        region: k,
        role: roleKey,
        min: count(r.min),
        max: count(r.max),
        ...(r.increment !== undefined ? { increment: count(r.increment) } : {}),
        ...(r.outExpression !== undefined ? { scaleOut: r.outExpression } : {}),
        ...(r.inExpression !== undefined ? { scaleIn: r.inExpression } : {}),
        ...(r.capacityRankingExpression !== undefined ? { rank: r.capacityRankingExpression } : {}),
        ...(limit !== undefined ? { limit } : {}),
      });
      rulePaths.push(`${key}.${k}.rulesByRole.${roleKey}`);
    }
  }
  if (errors.length > 0) return { ok: false, errors };

  const pathOf = (ours: string): string => {
    const rule = /^rules\[([0-9]+)\](?:\.(\w+))?(.*)$/.exec(ours);
    if (rule) return `${rulePaths[Number(rule[1])] ?? 'groups'}${rule[2] ? `.${RULE_FIELDS[rule[2]] ?? rule[2]}` : ''}${rule[3]}`;
    const region = /^regions\[([0-9]+)\]/.exec(ours);
    if (region) return regionPaths[Number(region[1])] ?? key;
    const role = /^roles\.(\w+)(\.parentRole)?/.exec(ours);
    if (role) return `roles.${roleKeys.get(role[1]!) ?? role[1]}${role[2] ? '.parentRoleName' : ''}`;
    if (ours.startsWith('platform')) return `(the config's compat.red5sm2.platform) ${ours}`;
    return ours;
  };
  // SM2's clients build their media URLs from serverAddress themselves and carry no admission
  // token: a group made through SM2's API admits anyone, as SM2's own nodes do by default
  // (docs/migrating-from-red5-sm2.md); an operator turns it on with our API.
  return { ok: true, translation: { spec: { name: config.name, platform: structuredClone(platform), regions, roles, rules, admission: { enabled: false } }, pathOf } };
}

/** Our node group as SM2's clients read a NodeGroupConfig. */
export function toSm2(group: NodeGroup) {
  const roles = Object.fromEntries(
    (Object.entries(group.roles) as Array<[Role, { parentRole?: Role } | undefined]>).map(([role, settings]) => [
      role,
      { name: role, capabilities: [...CAPABILITIES[role]], ...(settings?.parentRole ? { parentRoleName: settings.parentRole } : {}) },
    ]),
  );
  const groups = Object.fromEntries(
    group.regions.map((region) => [
      region.name,
      {
        nodeGroupName: group.name,
        subGroupName: region.name,
        groupType: 'main',
        rulesByRole: Object.fromEntries(
          group.rules
            .filter((rule) => rule.region === region.name)
            .map((rule) => [
              rule.role,
              {
                nodeGroupName: group.name,
                subGroupName: region.name,
                nodeRoleName: rule.role,
                min: rule.min,
                max: rule.max,
                increment: rule.increment,
                ...(rule.scaleOut !== undefined ? { outExpression: rule.scaleOut } : {}),
                ...(rule.scaleIn !== undefined ? { inExpression: rule.scaleIn } : {}),
                capacityRankingExpression: rule.rank,
                capacityLimitExpression: String(rule.limit),
              },
            ]),
        ),
      },
    ]),
  );
  return { name: group.name, cloudPlatform: group.platform.type, isScalingPaused: false, roles, groups };
}
