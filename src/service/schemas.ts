// TypeBox building blocks shared by the resources. The same schemas validate requests, shape responses and
// generate /api/openapi.json.
import { type ObjectOptions, type Static, type TObject, type TProperties, type TSchema, Type } from '@sinclair/typebox';

/**
 * A nullable value as one JSON-schema type list. anyOf would let Ajv's type coercion turn null into 0 or ""
 * in the first branch; a type list leaves a value alone when its type is already allowed.
 */
export function Nullable<T extends TSchema>(schema: T) {
  const type = ([] as string[]).concat((schema as { type?: string | string[] }).type ?? []);
  return Type.Unsafe<Static<T> | null>({ ...schema, type: [...type, 'null'] });
}

/** A reference to a schema registered with app.addSchema, typed as the schema it names. */
export function ref<T extends TSchema>(schema: T) {
  if (!schema.$id) throw new Error('only schemas with an $id can be referenced');
  return Type.Unsafe<Static<T>>(Type.Ref(schema.$id));
}

/**
 * A request body: properties with a default are optional to the client (the validator fills them in, so
 * handlers still find them), and the OpenAPI document says so.
 */
export function Body<T extends TProperties>(properties: T, options?: ObjectOptions): TObject<T> {
  const schema = Type.Object(properties, options);
  const required = ((schema.required ?? []) as string[]).filter((key) => properties[key].default === undefined);
  return { ...schema, required: required.length ? required : undefined } as TObject<T>;
}

/** Django's user names: letters, digits and @ . + - _. */
export const USERNAME_PATTERN = '^[\\w.@+-]+$';

/** The range of the databases' integer columns: a value beyond it fails in PostgreSQL rather than matching nothing. */
export const INT32 = { minimum: -2147483648, maximum: 2147483647 };

export const Id = Type.Integer({ minimum: 1, maximum: INT32.maximum });
export const IdParams = Type.Object({ id: Id });
export const Timestamp = Type.String({ format: 'date-time', description: 'ISO 8601 UTC, e.g. 2024-05-01T12:00:00.000Z' });

/** An option value as NodeODM takes it: boolean, number or string, kept as sent. */
export const OptionValue = Type.Unsafe<boolean | number | string>({ type: ['boolean', 'number', 'string'] });
export const TaskOptions = Type.Array(
  Type.Object({ name: Type.String({ minLength: 1, maxLength: 255 }), value: OptionValue }),
  { description: 'Processing options: a list of {name, value}', maxItems: 1000 },
);

export const ErrorReply = Type.Object(
  { detail: Type.Optional(Type.String()) },
  {
    $id: 'Error',
    additionalProperties: Type.Array(Type.String()),
    description: '{"detail": "..."}, or field errors {"field": ["message"]}',
  },
);

export const Success = Type.Object({ success: Type.Boolean() });
