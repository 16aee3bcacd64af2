/** Writes matrix/schema.json (for editors) from the zod schema: `pnpm schema`. */
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { matrixJsonSchema } from './schema.ts';

export function schemaText(): string {
  const schema = { title: 'cudamatrix matrix', ...(matrixJsonSchema() as object) };
  return `${JSON.stringify(schema, null, 2)}\n`;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const out = fileURLToPath(new URL('./schema.json', import.meta.url));
  writeFileSync(out, schemaText());
  console.log(`wrote ${out}`);
}
