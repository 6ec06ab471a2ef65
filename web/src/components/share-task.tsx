// Sharing a task as WebODM does: "public" opens its map and 3D view (and downloads) to anyone with the link, signed
// in or not, and "allow edits" lets them save its 3D scene too. Once public: the link, the code that embeds the view
// in another site, and a QR code of the link for phones.
import QRCode from 'qrcode';
import { useEffect, useState } from 'preact/hooks';
import { type Task, api, publicPagePath, taskPath } from '../api.ts';

type View = 'map' | '3d';

export function ShareTask({ task, canChange, onChanged }: { task: Task; canChange: boolean; onChanged: () => Promise<unknown> }) {
  const views: View[] = [
    ...(task.available_assets.some((a) => /^(orthophoto|dsm|dtm)\.tif$/.test(a)) ? (['map'] as const) : []),
    ...(task.available_assets.includes('georeferenced_model.laz') ? (['3d'] as const) : []),
  ];
  const [view, setView] = useState<View>(views[0] ?? 'map');
  const [qr, setQr] = useState<string | null>(null);
  const [copied, setCopied] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [saving, setSaving] = useState(false);
  // Shown as switched at once, and back if the change is refused.
  const [shared, setShared] = useState({ public: task.public, public_edit: task.public_edit });
  useEffect(() => setShared({ public: task.public, public_edit: task.public_edit }), [task.public, task.public_edit]);
  const link = `${location.origin}${publicPagePath(task.id, view)}`;
  const embed = `<iframe src="${location.origin}${publicPagePath(task.id, view, true)}" width="800" height="600" style="border: 0" allowfullscreen></iframe>`;

  useEffect(() => {
    let current = true;
    setQr(null);
    if (shared.public) QRCode.toDataURL(link, { margin: 1, width: 176 }).then((url) => current && setQr(url), () => undefined);
    return () => {
      current = false;
    };
  }, [link, shared.public]);

  if (views.length === 0) return null;

  async function change(fields: Partial<typeof shared>) {
    const before = shared;
    setShared({ ...shared, ...fields });
    setSaving(true);
    setError(null);
    try {
      await api(`${taskPath(task.project, task.id)}/`, { method: 'PATCH', body: fields });
      await onChanged();
    } catch (failure) {
      setShared(before);
      setError(failure instanceof Error ? failure.message : String(failure));
    } finally {
      setSaving(false);
    }
  }

  async function copy(what: string, text: string) {
    try {
      await navigator.clipboard.writeText(text);
      setCopied(what);
    } catch {
      setCopied(null);
      setError('The browser did not allow copying: select the text and copy it.');
    }
  }

  return (
    <section class="panel share-task" aria-labelledby="share-heading">
      <h2 id="share-heading">Share</h2>
      <label class="inline">
        <input type="checkbox" checked={shared.public} disabled={!canChange || saving} onChange={(e) => change({ public: e.currentTarget.checked })} />
        Public: anyone with the link sees this task, without signing in
      </label>
      <label class="inline">
        <input
          type="checkbox"
          checked={shared.public_edit}
          disabled={!canChange || saving || !shared.public}
          onChange={(e) => change({ public_edit: e.currentTarget.checked })}
        />
        Allow edits: they may also save the 3D view's scene
      </label>
      {!canChange && <p class="muted">Only those who may change this project can share its tasks.</p>}
      {error && (
        <p role="alert" class="error">
          {error}
        </p>
      )}
      {shared.public && (
        <div class="share-links">
          <div class="share-fields">
            {views.length > 1 && (
              <label>
                Show
                <select value={view} onChange={(e) => setView(e.currentTarget.value as View)}>
                  <option value="map">the map</option>
                  <option value="3d">the 3D view</option>
                </select>
              </label>
            )}
            <label>
              Link
              <span class="row">
                <input class="share-link" readOnly value={link} data-testid="public-link" onFocus={(e) => e.currentTarget.select()} />
                <button type="button" onClick={() => copy('link', link)}>
                  {copied === 'link' ? 'Copied' : 'Copy link'}
                </button>
              </span>
            </label>
            <label>
              Embed in a web page
              <textarea readOnly rows={3} value={embed} data-testid="public-embed" onFocus={(e) => e.currentTarget.select()} />
            </label>
            <span class="row">
              <button type="button" onClick={() => copy('embed', embed)}>
                {copied === 'embed' ? 'Copied' : 'Copy code'}
              </button>
              <a href={link} target="_blank" rel="noopener">
                Open the public page
              </a>
            </span>
          </div>
          {qr && <img class="share-qr" src={qr} width={176} height={176} alt={`QR code of the link ${link}`} data-testid="public-qr" />}
        </div>
      )}
    </section>
  );
}
