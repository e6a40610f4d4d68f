/** A value JSON can carry without loss. */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

/** A JSON object. */
export type JsonObject = { [key: string]: JsonValue };

/**
 * What a writer made without a payload type accepts: any JSON value, or an object typed by an
 * `interface` (TypeScript gives interfaces no index signature, so they are not `JsonObject`s).
 * Functions are refused here; a value inside an interface that JSON cannot carry is refused
 * when the checkpoint is encoded (`checkpoint_schema_invalid`). Name the type —
 * `createWriter<AgentState>()` — to have it checked field by field instead.
 */
export type JsonPayload = JsonValue | (object & { readonly apply?: never; readonly call?: never });

/*
 * The part of validation the core entry needs: turning a validator compiled at build time
 * (src/codec/generated/<schema>.js) into issues, and throwing on them. It loads neither ajv
 * nor zod; compiling a schema at run time is `compileValidator` (validate.ts), which does.
 */

/** A JSON Schema (draft 2020-12) object. */
export type JsonSchema = { readonly [key: string]: unknown };
