import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { schemaText } from './write-schema.ts';

describe('matrix/schema.json', () => {
  it('is current with the zod schema (run "pnpm schema" after changing it)', () => {
    const committed = readFileSync(path.join(import.meta.dirname, 'schema.json'), 'utf8');
    expect(committed).toBe(schemaText());
  });

  it('describes targets, transports and expectations for editors', () => {
    const schema = JSON.parse(schemaText());
    expect(schema.required).toEqual(expect.arrayContaining(['version', 'targets']));
    const target = schema.properties.targets.items;
    expect(Object.keys(target.properties)).toEqual(expect.arrayContaining(['name', 'environment', 'transport', 'probes', 'expect']));
    expect(target.additionalProperties).toBe(false);
  });
});
