import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { z as z3 } from 'zod3';
import { jsonDocumentFormat, IntegritySchema } from 'savepoint/toolkit';
import { isCheckpointError } from 'savepoint';

const mapping = { toDocument: () => ({}) as never, fromDocument: () => ({}) as never };

describe('jsonDocumentFormat', () => {
  it('refuses a schema that is not a zod 4 schema with checkpoint_config_invalid (it converts through the schema’s own toJSONSchema)', () => {
    for (const schema of [z3.object({ a: z3.string() }), { parse: () => ({}) }]) {
      let error: unknown;
      try {
        jsonDocumentFormat({ schema: schema as never, ...mapping });
      } catch (err) {
        error = err;
      }
      expect(isCheckpointError(error, 'checkpoint_config_invalid')).toBe(true);
    }
  });

  it('exports the JSON Schema of a custom zod 4 schema and validates with it from the first decode on', async () => {
    const schema = z.object({ n: z.number().int(), integrity: IntegritySchema }).strict();
    const format = jsonDocumentFormat({ schema, ...mapping });
    expect(format.jsonSchema).toEqual(z.toJSONSchema(schema, { io: 'output', unrepresentable: 'any' }));
    await expect(format.decode(new TextEncoder().encode('{"n":1.5}'), 'x.json')).rejects.toThrow(/checkpoint_schema_invalid/);
  });
});
