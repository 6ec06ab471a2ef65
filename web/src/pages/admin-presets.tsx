// Presets: named sets of processing options offered when a task is created. System presets come with
// Aeromap and are shown read-only here.
import { useState } from 'preact/hooks';
import { api, listAll } from '../api.ts';
import { type NodeOption, formatValue } from '../options.ts';
import type { Preset } from './admin-logic.ts';
import { OptionsEditor, type OptionRow, optionsOf, rowsOf } from './admin-option-editor.tsx';
import { AdminSection, AdminTable, EditAndDelete, useLoad } from './admin-shared.tsx';
import { FormModal } from '../components/form-modal.tsx';

interface Data {
  presets: Preset[];
  known: NodeOption[];
}

export function PresetsSection() {
  const loaded = useLoad<Data>(async () => {
    const [presets, known] = await Promise.all([listAll<Preset>('/api/presets/'), api<NodeOption[]>('/api/processingnodes/options/')]);
    return { presets, known: [...known].sort((a, b) => a.name.localeCompare(b.name)) };
  });
  const [editing, setEditing] = useState<Preset | 'new' | null>(null);
  return (
    <AdminSection
      id="presets"
      title="Presets"
      addLabel="Add preset"
      onAdd={() => setEditing('new')}
      loaded={loaded}
      loadingText="Loading presets…"
      table={(data) => <PresetsTable presets={data.presets} onEdit={setEditing} onChanged={loaded.reload} />}
    >
      {editing && loaded.data && (
        <PresetForm preset={editing === 'new' ? null : editing} known={loaded.data.known} onSaved={loaded.reload} onClose={() => setEditing(null)} />
      )}
    </AdminSection>
  );
}

function PresetsTable({ presets, onEdit, onChanged }: { presets: Preset[]; onEdit: (preset: Preset) => void; onChanged: () => void }) {
  return (
    <AdminTable section="presets" headers={['Name', 'Kind', 'Options']}>
      {presets.map((preset) => (
        <tr key={preset.id}>
          <th scope="row">{preset.name}</th>
          <td>{preset.system ? <span class="badge" title="Comes with Aeromap; cannot be changed here">System · read-only</span> : <span class="muted">Custom</span>}</td>
          <td>
            <OptionList options={preset.options} />
          </td>
          <td class="admin-actions">
            {!preset.system && (
              <EditAndDelete noun="preset" name={preset.name} path={`/api/presets/${preset.id}/`} onEdit={() => onEdit(preset)} onDeleted={onChanged} />
            )}
          </td>
        </tr>
      ))}
    </AdminTable>
  );
}

function OptionList({ options }: { options: Preset['options'] }) {
  if (!options.length) return <span class="muted">Defaults</span>;
  return (
    <ul class="admin-option-list">
      {options.map((option) => (
        <li key={option.name}>
          <code>
            {option.name}={formatValue(option.value)}
          </code>
        </li>
      ))}
    </ul>
  );
}

function PresetForm({ preset, known, onSaved, onClose }: { preset: Preset | null; known: NodeOption[]; onSaved: () => void; onClose: () => void }) {
  const [name, setName] = useState(preset?.name ?? '');
  const [rows, setRows] = useState<OptionRow[]>(() => rowsOf(preset?.options ?? [], known));
  async function save() {
    const body = { name: name.trim(), options: optionsOf(rows, known) };
    if (preset) await api(`/api/presets/${preset.id}/`, { method: 'PATCH', body });
    else await api('/api/presets/', { method: 'POST', body });
    onSaved();
  }
  return (
    <FormModal title={preset ? `Edit preset ${preset.name}` : 'Add preset'} saveLabel={preset ? 'Save' : 'Add preset'} onSave={save} onClose={onClose}>
      <label>
        Name
        <input required maxLength={255} value={name} onInput={(e) => setName(e.currentTarget.value)} />
      </label>
      <OptionsEditor known={known} rows={rows} onChange={setRows} />
    </FormModal>
  );
}
