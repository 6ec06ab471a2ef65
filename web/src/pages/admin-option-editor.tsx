// Edits a preset's options as rows of an option name and a value whose input suits the option's type.
import { type NodeOption, type OptionValue, type InputKind, defaultValue, domainBounds, enumChoices, inputKind, parseValue } from '../options.ts';

/** One row as edited: a number stays text while typed, so that "1." or "" can pass on the way to "1.5". */
export interface OptionRow {
  key: number;
  name: string;
  value: string | boolean;
  /** The type the stored value had, for options no online node offers. */
  original?: OptionValue;
}

let nextKey = 1;

export function rowsOf(options: { name: string; value: OptionValue }[], known: NodeOption[]): OptionRow[] {
  return options.map(({ name, value }) => {
    const kind = inputKind(known.find((option) => option.name === name), value);
    return { key: nextKey++, name, value: kind === 'bool' ? value === true || value === 'true' : String(value), original: value };
  });
}

/** The rows as the API takes them; throws a sentence naming the first row that is not a value. */
export function optionsOf(rows: OptionRow[], known: NodeOption[]): { name: string; value: OptionValue }[] {
  return rows
    .filter((row) => row.name)
    .map((row) => {
      const kind = inputKind(known.find((option) => option.name === row.name), row.original);
      const parsed = parseValue(kind, row.value, row.name);
      if ('error' in parsed) throw new Error(parsed.error);
      return { name: row.name, value: parsed.value };
    });
}

export function OptionsEditor({ known, rows, onChange }: { known: NodeOption[]; rows: OptionRow[]; onChange: (rows: OptionRow[]) => void }) {
  const update = (key: number, change: Partial<OptionRow>) => onChange(rows.map((row) => (row.key === key ? { ...row, ...change } : row)));
  const used = new Set(rows.map((row) => row.name));
  return (
    <fieldset class="admin-options-editor">
      <legend>Options</legend>
      {!known.length && <p class="field-help">No online node lists its options, so none can be added now; the preset's options stay as they are.</p>}
      {rows.length === 0 && <p class="muted">No options: tasks get each option's default.</p>}
      {rows.map((row, index) => (
        <OptionRowEditor
          key={row.key}
          row={row}
          index={index}
          known={known}
          used={used}
          onChange={(change) => update(row.key, change)}
          onRemove={() => onChange(rows.filter((other) => other.key !== row.key))}
        />
      ))}
      <div>
        <button type="button" disabled={!known.length || known.every((option) => used.has(option.name))} onClick={() => onChange([...rows, { key: nextKey++, name: '', value: '' }])}>
          Add option
        </button>
      </div>
    </fieldset>
  );
}

function OptionRowEditor(props: {
  row: OptionRow;
  index: number;
  known: NodeOption[];
  used: Set<string>;
  onChange: (change: Partial<OptionRow>) => void;
  onRemove: () => void;
}) {
  const { row, known } = props;
  const option = known.find((candidate) => candidate.name === row.name);
  const choices = known.filter((candidate) => candidate.name === row.name || !props.used.has(candidate.name));
  function choose(name: string) {
    const chosen = known.find((candidate) => candidate.name === name);
    const value = chosen ? defaultValue(chosen) : '';
    props.onChange({ name, value: typeof value === 'boolean' ? value : String(value), original: undefined });
  }
  return (
    <div class="admin-option-row">
      <label>
        Option {props.index + 1}
        <select required aria-label={`Option ${props.index + 1}`} value={row.name} onChange={(e) => choose(e.currentTarget.value)}>
          <option value="" disabled>
            Choose an option…
          </option>
          {row.name && !option && <option value={row.name}>{row.name} (no online node offers it)</option>}
          {choices.map((candidate) => (
            <option key={candidate.name} value={candidate.name}>
              {candidate.name}
            </option>
          ))}
        </select>
      </label>
      {row.name ? <ValueInput kind={inputKind(option, row.original)} option={option} row={row} onChange={(value) => props.onChange({ value })} /> : <span />}
      <button type="button" class="admin-remove" onClick={props.onRemove} aria-label={`Remove option ${row.name || props.index + 1}`}>
        Remove
      </button>
      {option?.help && <p class="field-help admin-option-help">{option.help}</p>}
    </div>
  );
}

function ValueInput({ kind, option, row, onChange }: { kind: InputKind; option: NodeOption | undefined; row: OptionRow; onChange: (value: string | boolean) => void }) {
  const label = `Value of ${row.name}`;
  if (kind === 'bool') {
    return (
      <label class="inline admin-option-value">
        <input type="checkbox" checked={row.value === true} onChange={(e) => onChange(e.currentTarget.checked)} aria-label={label} />
        {row.value === true ? 'true' : 'false'}
      </label>
    );
  }
  if (kind === 'enum') {
    const choices = enumChoices(option);
    const text = String(row.value);
    return (
      <label class="admin-option-value">
        Value
        <select value={text} onChange={(e) => onChange(e.currentTarget.value)} aria-label={label}>
          {!choices.includes(text) && <option value={text}>{text || '(empty)'}</option>}
          {choices.map((choice) => (
            <option key={choice} value={choice}>
              {choice || '(empty)'}
            </option>
          ))}
        </select>
      </label>
    );
  }
  if (kind === 'int' || kind === 'float') {
    const { min, max } = domainBounds(option?.domain);
    return (
      <label class="admin-option-value">
        Value
        <input type="number" required step={kind === 'int' ? 1 : 'any'} min={min} max={max} value={String(row.value)} onInput={(e) => onChange(e.currentTarget.value)} aria-label={label} />
      </label>
    );
  }
  return (
    <label class="admin-option-value">
      Value
      <input value={String(row.value)} onInput={(e) => onChange(e.currentTarget.value)} aria-label={label} />
    </label>
  );
}
