// The catalog a platform team curates (issue 36): per upstream (`upstreams.<name>.tools`, `.prompts`,
// `.validateArguments`) and per federated endpoint (`federated.<name>.tools`), what its agents see of each tool
// and how their calls are checked. Wired into schema.ts; the runtime is src/catalog/.
import { z } from "zod";

/** A tool or prompt name a client can use: MCP's rule (1 to 128 of A-Z a-z 0-9 _ - .), so every client accepts it. */
const CLIENT_NAME = /^[A-Za-z0-9_.-]{1,128}$/;

const jsonObject = z.record(z.string(), z.unknown());

/** Whether a key of a tools block is a glob (`*` or `?`): such a key may not rename (every tool would get one name). */
export function isGlobKey(key: string): boolean {
  return key.includes("*") || key.includes("?");
}

const toolOverrideSchema = z
  .object({
    name: z
      .string()
      .regex(CLIENT_NAME, "must be 1 to 128 of A-Z a-z 0-9 _ - . (MCP's tool name rule)")
      .optional()
      .describe(
        "The name clients see and call; the upstream's own name is then unknown to them. Not with a glob key. Checked for clashes at load (--check).",
      ),
    description: z.string().optional().describe("Replaces the tool's description."),
    appendDescription: z
      .string()
      .optional()
      .describe("Appended to the description (the upstream's, or `description`), after a blank line."),
    title: z.string().optional().describe("The tool's display title (Tool.title)."),
    annotations: jsonObject
      .optional()
      .describe("Merged over the tool's annotations (readOnlyHint, destructiveHint, ...): these keys win."),
    pin: jsonObject
      .optional()
      .describe(
        "Argument → value, fixed by the gateway: taken out of the listed inputSchema (properties and required) and merged into every call. A client that sends a pinned argument is refused (-32602 pinned_argument).",
      ),
    defaults: jsonObject
      .optional()
      .describe(
        "Argument → value filled in when a call leaves it out; listed as the property's `default` (and no longer required).",
      ),
    schema: z
      .record(z.string(), jsonObject)
      .optional()
      .describe(
        "Argument → a narrower JSON Schema (e.g. an enum): its keywords are merged over the argument's own in the listed inputSchema, and calls are checked against it.",
      ),
  })
  .strict();

export type ToolOverride = z.output<typeof toolOverrideSchema>;

const promptOverrideSchema = z
  .object({
    name: z
      .string()
      .regex(CLIENT_NAME, "must be 1 to 128 of A-Z a-z 0-9 _ - .")
      .optional()
      .describe("The name clients see and get; the upstream's own name is then unknown to them."),
    description: z.string().optional().describe("Replaces the prompt's description."),
  })
  .strict();

export type PromptOverride = z.output<typeof promptOverrideSchema>;

/** Renames in one block must leave every name a client can call pointing at one thing. */
function refineRenames(
  entries: Record<string, { name?: string | undefined }>,
  ctx: z.RefinementCtx,
  kind: string,
): void {
  const taken = new Map<string, string>();
  for (const [key, o] of Object.entries(entries)) {
    if (o.name === undefined) continue;
    if (isGlobKey(key)) {
      ctx.addIssue({
        code: "custom",
        path: [key, "name"],
        message: `a glob key (${key}) cannot rename: every ${kind} it matches would get one name`,
      });
      continue;
    }
    const other = taken.get(o.name);
    if (other !== undefined)
      ctx.addIssue({
        code: "custom",
        path: [key, "name"],
        message: `clashes with the rename of ${other}: both would be called ${o.name}`,
      });
    taken.set(o.name, key);
  }
  for (const [name, key] of taken) {
    // An exact key not renamed keeps its upstream name: a rename to it would hide one of the two.
    const own = entries[name];
    if (name !== key && own !== undefined && own.name === undefined)
      ctx.addIssue({
        code: "custom",
        path: [key, "name"],
        message: `clashes with the ${kind} ${name} of this upstream, which keeps its name`,
      });
  }
}

export const toolsBlockSchema = z
  .record(z.string().min(1), toolOverrideSchema)
  .superRefine((t, ctx) => {
    refineRenames(t, ctx, "tool");
    for (const [key, o] of Object.entries(t)) {
      for (const arg of Object.keys(o.pin ?? {}))
        if (o.defaults && arg in o.defaults)
          ctx.addIssue({
            code: "custom",
            path: [key, "defaults", arg],
            message: "is pinned: a pinned argument has no default",
          });
    }
  })
  .describe(
    "Overrides of this upstream's tools, by the upstream's own tool name (a glob such as github_* for every override but `name`; an exact key wins over globs, then the first glob in order). The listed tool shows the result; a call is mapped back to the upstream's name and arguments.",
  );

export const promptsBlockSchema = z
  .record(z.string().min(1), promptOverrideSchema)
  .superRefine((p, ctx) => refineRenames(p, ctx, "prompt"))
  .describe(
    "Overrides of this upstream's prompts, by the upstream's own prompt name: rename, replace the description.",
  );

export const validateArgumentsSchema = z
  .enum(["off", "warn", "enforce"])
  .describe(
    "Check each tools/call's arguments against the tool's inputSchema as listed after overrides (JSON Schema 2020-12): enforce refuses an invalid call (-32602 invalid_arguments, never sent upstream), warn logs and counts it and lets it through. An argument narrowed by `tools.<tool>.schema` is checked in every mode. Default: off.",
  );

export const federatedToolsSchema = toolsBlockSchema.describe(
  "Overrides of this endpoint's tools, by their prefixed names (<upstream>__<tool>, as the endpoint lists them before its overrides; globs allowed as for upstreams). Applied after the member's own upstreams.<name>.tools; live on reload.",
);
