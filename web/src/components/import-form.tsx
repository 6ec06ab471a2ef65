// Imports into a project as a new task: an all.zip of results (Aeromap, ODM, WebODM) or a task's backup, or
// products made elsewhere (tasks/import/external: an orthophoto, elevation models, a point cloud, a model).
import { useState } from 'preact/hooks';
import { api } from '../api.ts';
import { FormModal } from './form-modal.tsx';

/** The products an external import takes: the form field the API names each by, its label, the files accepted. */
const PRODUCTS = [
  { field: 'orthophoto', label: 'Orthophoto (GeoTIFF)', accept: '.tif,.tiff' },
  { field: 'dsm', label: 'Surface model, DSM (GeoTIFF)', accept: '.tif,.tiff' },
  { field: 'dtm', label: 'Terrain model, DTM (GeoTIFF)', accept: '.tif,.tiff' },
  { field: 'pointcloud', label: 'Point cloud (LAS, LAZ)', accept: '.las,.laz' },
  { field: 'texturedmodel', label: 'Textured model (GLB)', accept: '.glb' },
] as const;

type Field = (typeof PRODUCTS)[number]['field'];

async function importZip(projectId: number, file: File | null, name: string): Promise<void> {
  if (!file) throw new Error('Choose a zip file.');
  const form = new FormData();
  if (name) form.append('name', name);
  form.append('file', file, file.name);
  await api(`/api/projects/${projectId}/tasks/import`, { method: 'POST', body: form });
}

async function importProducts(projectId: number, files: Partial<Record<Field, File>>, name: string): Promise<void> {
  const chosen = Object.entries(files).filter((entry): entry is [Field, File] => entry[1] !== undefined);
  if (chosen.length === 0) throw new Error('Choose at least one product.');
  const base = `/api/projects/${projectId}/tasks/import/external`;
  const { uuid } = await api<{ uuid: string }>(`${base}/init`, { method: 'POST' });
  for (const [field, file] of chosen) {
    const form = new FormData();
    form.append('uuid', uuid);
    form.append(field, file, file.name);
    await api(`${base}/upload`, { method: 'POST', body: form });
  }
  await api(`${base}/commit`, { method: 'POST', body: { uuid, ...(name ? { name } : {}) } });
}

export function ImportForm({ projectId, onClose, onDone }: { projectId: number; onClose: () => void; onDone: () => Promise<unknown> }) {
  const [kind, setKind] = useState<'zip' | 'products'>('zip');
  const [zip, setZip] = useState<File | null>(null);
  const [products, setProducts] = useState<Partial<Record<Field, File>>>({});
  const [name, setName] = useState('');
  const send = async () => {
    await (kind === 'zip' ? importZip(projectId, zip, name) : importProducts(projectId, products, name));
    await onDone();
  };
  return (
    <FormModal title="Import a task" saveLabel="Import" onSave={send} onClose={onClose}>
      <div role="radiogroup" aria-label="What to import" class="row">
        <label class="inline">
          <input type="radio" name="kind" checked={kind === 'zip'} onChange={() => setKind('zip')} /> Results or a backup (zip)
        </label>
        <label class="inline">
          <input type="radio" name="kind" checked={kind === 'products'} onChange={() => setKind('products')} /> Products made elsewhere
        </label>
      </div>
      {kind === 'zip' ? (
        <>
          <p class="muted">An all.zip of results, or a task's backup (which brings back its photographs, console, options and tags).</p>
          <label>
            Zip file
            <input type="file" name="file" accept=".zip,application/zip" required onChange={(e) => setZip(e.currentTarget.files?.[0] ?? null)} />
          </label>
        </>
      ) : (
        <>
          <p class="muted">Any of these, georeferenced in any coordinate system: they are shown, measured and compared as a processed task's.</p>
          {PRODUCTS.map(({ field, label, accept }) => (
            <label key={field}>
              {label}
              <input
                type="file"
                name={field}
                accept={accept}
                onChange={(e) => setProducts((chosen) => ({ ...chosen, [field]: e.currentTarget.files?.[0] }))}
              />
            </label>
          ))}
        </>
      )}
      <label>
        Name <span class="muted">(a backup keeps its own)</span>
        <input name="name" maxLength={255} value={name} onInput={(e) => setName(e.currentTarget.value)} />
      </label>
    </FormModal>
  );
}
