// validate.mjs: reads an OpenAPI document (a file, or - for standard
// input) and validates it with @readme/openapi-parser (the OpenAPI 3.1
// schema, $ref resolution, duplicate operationIds, component names).
// Prints "valid" or the errors; exit 1 when invalid.
import { readFileSync } from 'node:fs';
import { validate, compileErrors } from '@readme/openapi-parser';

const src = process.argv[2] === '-' || !process.argv[2] ? 0 : process.argv[2];
const doc = JSON.parse(readFileSync(src, 'utf8'));
const result = await validate(doc);
if (!result.valid) {
  console.log(compileErrors(result));
  process.exit(1);
}
if (result.warnings && result.warnings.length) console.log(compileErrors({ ...result, errors: result.warnings }));
console.log('valid');
