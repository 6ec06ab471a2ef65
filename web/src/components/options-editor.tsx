// An editor for processing options, drawn from the options the nodes describe: a checkbox for a boolean, a list
// for a choice, a number or text field otherwise, each with the node's help and a way back to the default.
import { useState } from 'preact/hooks';
import { type NodeOption, type OptionValue, defaultValue, domainBounds, enumChoices, inputKind, parseValue } from '../options.ts';

interface Props {
  available: NodeOption[];
  values: Map<string, OptionValue>;
  onChange: (values: Map<string, OptionValue>) => void;
}

export function OptionsEditor({ available, values, onChange }: Props) {
  const [filter, setFilter] = useState('');
  const set = (name: string, value: OptionValue | undefined) => {
    const next = new Map(values);
    if (value === undefined) next.delete(name);
    else next.set(name, value);
    onChange(next);
  };
  const shown = available.filter((o) => o.name.includes(filter.trim().toLowerCase()) || o.help.toLowerCase().includes(filter.trim().toLowerCase()));
  return (
    <div class="options-editor">
      <label>
        Find an option
        <input type="search" value={filter} onInput={(e) => setFilter(e.currentTarget.value)} placeholder="e.g. dsm, resolution" />
      </label>
      <div class="options-list">
        {shown.map((option) => (
          <OptionField key={option.name} option={option} value={values.has(option.name) ? values.get(option.name) : defaultValue(option)} changed={values.has(option.name) && values.get(option.name) !== defaultValue(option)} onSet={(v) => set(option.name, v)} />
        ))}
      </div>
    </div>
  );
}

function OptionField({ option, value, changed, onSet }: { option: NodeOption; value: OptionValue | undefined; changed: boolean; onSet: (value: OptionValue | undefined) => void }) {
  const kind = inputKind(option);
  const id = `option-${option.name}`;
  const help = <span class="field-help" id={`${id}-help`}>{option.help}</span>;
  const reset = changed && (
    <button type="button" class="link" onClick={() => onSet(undefined)} aria-label={`Reset ${option.name} to its default`}>
      default
    </button>
  );
  if (kind === 'bool') {
    return (
      <div class={`option${changed ? ' changed' : ''}`}>
        <label class="inline" for={id}>
          <input id={id} type="checkbox" checked={value === true} aria-describedby={`${id}-help`} onChange={(e) => onSet(e.currentTarget.checked)} />
          {option.name} {reset}
        </label>
        {help}
      </div>
    );
  }
  const choices = kind === 'enum' ? enumChoices(option) : null;
  const { min, max } = domainBounds(option.domain);
  return (
    <div class={`option${changed ? ' changed' : ''}`}>
      <label for={id}>
        <span>
          {option.name} {reset}
        </span>
      </label>
      {choices ? (
        <select id={id} value={String(value)} aria-describedby={`${id}-help`} onChange={(e) => onSet(e.currentTarget.value)}>
          {choices.map((choice) => (
            <option key={choice} value={choice}>
              {choice === '' ? '(none)' : choice}
            </option>
          ))}
        </select>
      ) : (
        <input
          id={id}
          inputMode={kind === 'int' ? 'numeric' : kind === 'float' ? 'decimal' : undefined}
          value={String(value ?? '')}
          aria-describedby={`${id}-help`}
          onChange={(e) => {
            const parsed = parseValue(kind, e.currentTarget.value, option.name);
            const number = 'value' in parsed && typeof parsed.value === 'number' ? parsed.value : null;
            const inRange = number === null || ((min === undefined || number >= min) && (max === undefined || number <= max));
            e.currentTarget.setCustomValidity('error' in parsed ? parsed.error : inRange ? '' : `${option.name}: ${option.domain}`);
            if ('value' in parsed && inRange) onSet(parsed.value);
          }}
        />
      )}
      {help}
    </div>
  );
}
