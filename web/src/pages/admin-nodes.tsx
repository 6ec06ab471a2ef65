// Processing nodes: the NodeODM-compatible servers that process tasks. Everyone may see them; only staff
// may add, change or remove one, and only staff are shown a node's token.
import { Fragment } from 'preact';
import { useState } from 'preact/hooks';
import { api, listAll } from '../api.ts';
import { type NodeOption, formatValue } from '../options.ts';
import type { ProcessingNode } from './admin-logic.ts';
import { AdminSection, AdminTable, EditAndDelete, formatTime, useLoad } from './admin-shared.tsx';
import { FormModal } from '../components/form-modal.tsx';

export function NodesSection({ staff }: { staff: boolean }) {
  const loaded = useLoad(() => listAll<ProcessingNode>('/api/processingnodes/'));
  const [editing, setEditing] = useState<ProcessingNode | 'new' | null>(null);
  const refresh = (
    <button type="button" onClick={loaded.reload}>
      Refresh
    </button>
  );
  return (
    <AdminSection
      id="nodes"
      title="Processing nodes"
      addLabel="Add node"
      onAdd={() => setEditing('new')}
      canAdd={staff}
      addNeedsData={false}
      tools={refresh}
      loaded={loaded}
      loadingText="Loading processing nodes…"
      table={(nodes) => <NodesTable nodes={nodes} staff={staff} onEdit={setEditing} onChanged={loaded.reload} />}
    >
      {editing && <NodeForm node={editing === 'new' ? null : editing} onSaved={loaded.reload} onClose={() => setEditing(null)} />}
    </AdminSection>
  );
}

const NODE_HEADERS = ['Node', 'Status', 'Queue', 'Max images', 'Engine', 'Last refreshed'];

function NodesTable(props: { nodes: ProcessingNode[]; staff: boolean; onEdit: (node: ProcessingNode) => void; onChanged: () => void }) {
  const [open, setOpen] = useState<number | null>(null);
  return (
    <AdminTable section="nodes" headers={NODE_HEADERS} emptyText={props.nodes.length === 0 && 'No processing nodes yet.'}>
      {props.nodes.map((node) => (
        <Fragment key={node.id}>
          <NodeRow
            node={node}
            staff={props.staff}
            optionsOpen={open === node.id}
            onToggleOptions={() => setOpen(open === node.id ? null : node.id)}
            onEdit={() => props.onEdit(node)}
            onChanged={props.onChanged}
          />
          {open === node.id && (
            <tr>
              <td colSpan={NODE_HEADERS.length + 1} id={`node-options-${node.id}`} class="admin-node-options">
                <NodeOptions node={node} />
              </td>
            </tr>
          )}
        </Fragment>
      ))}
    </AdminTable>
  );
}

function NodeRow(props: { node: ProcessingNode; staff: boolean; optionsOpen: boolean; onToggleOptions: () => void; onEdit: () => void; onChanged: () => void }) {
  const { node } = props;
  return (
    <tr>
      <th scope="row">
        {node.hostname}:{node.port}
        {node.label !== `${node.hostname}:${node.port}` && <div class="muted">{node.label}</div>}
      </th>
      <td>
        <span class={node.online ? 'badge completed' : 'badge failed'}>{node.online ? 'Online' : 'Offline'}</span>
      </td>
      <td>{node.queue_count}</td>
      <td>{node.max_images ?? <span class="muted">No limit</span>}</td>
      <td>{node.engine ? `${node.engine} ${node.engine_version}` : <span class="muted">Unknown</span>}</td>
      <td>{formatTime(node.last_refreshed)}</td>
      <td class="admin-actions">
        <button type="button" aria-expanded={props.optionsOpen} aria-controls={props.optionsOpen ? `node-options-${node.id}` : undefined} onClick={props.onToggleOptions}>
          Options ({node.available_options.length})
        </button>
        {props.staff && (
          <EditAndDelete
            noun="processing node"
            editNoun="node"
            name={node.label}
            path={`/api/processingnodes/${node.id}/`}
            onEdit={props.onEdit}
            onDeleted={props.onChanged}
          />
        )}
      </td>
    </tr>
  );
}

function NodeOptions({ node }: { node: ProcessingNode }) {
  if (!node.available_options.length) {
    return <p class="muted">This node has not listed its options{node.online ? '' : ' (it is offline)'}.</p>;
  }
  return (
    // Focusable so that the list of some fifty options can be scrolled from the keyboard.
    <div class="admin-options-scroll" tabIndex={0} role="region" aria-label={`Options of ${node.label}`}>
      <table class="admin-options" aria-label={`Options of ${node.label}`}>
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">Type</th>
            <th scope="col">Default</th>
            <th scope="col">Help</th>
          </tr>
        </thead>
        <tbody>
          {node.available_options.map((option) => (
            <tr key={option.name}>
              <th scope="row">
                <code>{option.name}</code>
              </th>
              <td>{describeType(option)}</td>
              <td>
                <code>{formatValue(option.value)}</code>
              </td>
              <td class="admin-help">{option.help}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

function describeType(option: NodeOption): string {
  if (Array.isArray(option.domain)) return `one of ${option.domain.map((choice) => formatValue(String(choice))).join(', ')}`;
  return option.domain && option.domain !== option.type ? `${option.type} (${String(option.domain)})` : option.type;
}

/** Adds a node or changes its address or token. The API names a node by hostname:port, so that is its label. */
function NodeForm({ node, onSaved, onClose }: { node: ProcessingNode | null; onSaved: () => void; onClose: () => void }) {
  const [hostname, setHostname] = useState(node?.hostname ?? '');
  const [port, setPort] = useState(String(node?.port ?? 3000));
  const [nodeToken, setNodeToken] = useState(node?.token ?? '');
  async function save() {
    const body = { hostname: hostname.trim(), port: Number(port), token: nodeToken };
    if (node) await api(`/api/processingnodes/${node.id}/`, { method: 'PATCH', body });
    else await api('/api/processingnodes/', { method: 'POST', body });
    onSaved();
  }
  return (
    <FormModal title={node ? `Edit node ${node.label}` : 'Add processing node'} saveLabel={node ? 'Save' : 'Add node'} onSave={save} onClose={onClose}>
      <div class="admin-address">
        <label>
          Hostname or IP address
          <input required value={hostname} onInput={(e) => setHostname(e.currentTarget.value)} autocomplete="off" spellcheck={false} />
        </label>
        <label>
          Port
          <input required type="number" min={1} max={65535} step={1} value={port} onInput={(e) => setPort(e.currentTarget.value)} />
        </label>
      </div>
      <label>
        Token
        <input value={nodeToken} onInput={(e) => setNodeToken(e.currentTarget.value)} autocomplete="off" spellcheck={false} />
        <span class="field-help">The node's token, if it was started with one (sent as ?token=). Leave empty otherwise.</span>
      </label>
      <p class="field-help">The node is listed by its address ({hostname.trim() || 'hostname'}:{port || 'port'}); the API keeps no other label.</p>
    </FormModal>
  );
}
