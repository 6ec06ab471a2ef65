// Task records in SQLite, written on every change of state. WAL with synchronous=NORMAL keeps every committed
// write through a crash of the node process (kill -9); only a crash of the whole machine can lose the last ones.
import Database from 'better-sqlite3';
import type { OptionValue } from '../protocol/options.ts';
import { TaskStatus, type TaskStatusCode } from '../protocol/status.ts';
import type { PendingUpload, TaskFields, TaskRecord } from './model.ts';

// Each entry brings the schema from version i to i + 1 (PRAGMA user_version counts them).
const MIGRATIONS: string[] = [
  `CREATE TABLE tasks (
     seq INTEGER PRIMARY KEY AUTOINCREMENT,
     uuid TEXT NOT NULL UNIQUE,
     name TEXT NOT NULL,
     date_created INTEGER NOT NULL,
     options TEXT NOT NULL,
     webhook TEXT,
     skip_post_processing INTEGER NOT NULL,
     outputs TEXT,
     status INTEGER NOT NULL,
     error_message TEXT,
     images_count INTEGER NOT NULL,
     progress REAL NOT NULL,
     queued_at INTEGER NOT NULL,
     started_at INTEGER,
     finished_at INTEGER,
     engine_pid INTEGER,
     engine_started INTEGER NOT NULL
   );
   CREATE TABLE uploads (
     uuid TEXT PRIMARY KEY,
     fields TEXT NOT NULL,
     created_at INTEGER NOT NULL
   );`,
];

interface TaskRow {
  uuid: string;
  name: string;
  date_created: number;
  options: string;
  webhook: string | null;
  skip_post_processing: number;
  outputs: string | null;
  status: number;
  error_message: string | null;
  images_count: number;
  progress: number;
  queued_at: number;
  started_at: number | null;
  finished_at: number | null;
  engine_pid: number | null;
  engine_started: number;
}

interface UploadRow {
  uuid: string;
  fields: string;
  created_at: number;
}

function toRow(t: TaskRecord): TaskRow {
  return {
    uuid: t.uuid,
    name: t.name,
    date_created: t.dateCreated,
    options: JSON.stringify(t.options),
    webhook: t.webhook,
    skip_post_processing: t.skipPostProcessing ? 1 : 0,
    outputs: t.outputs === null ? null : JSON.stringify(t.outputs),
    status: t.status,
    error_message: t.errorMessage,
    images_count: t.imagesCount,
    progress: t.progress,
    queued_at: t.queuedAt,
    started_at: t.startedAt,
    finished_at: t.finishedAt,
    engine_pid: t.enginePid,
    engine_started: t.engineStarted ? 1 : 0,
  };
}

function fromRow(r: TaskRow): TaskRecord {
  return {
    uuid: r.uuid,
    name: r.name,
    dateCreated: r.date_created,
    options: JSON.parse(r.options) as OptionValue[],
    webhook: r.webhook,
    skipPostProcessing: r.skip_post_processing === 1,
    outputs: r.outputs === null ? null : (JSON.parse(r.outputs) as string[]),
    status: r.status as TaskStatusCode,
    errorMessage: r.error_message,
    imagesCount: r.images_count,
    progress: r.progress,
    queuedAt: r.queued_at,
    startedAt: r.started_at,
    finishedAt: r.finished_at,
    enginePid: r.engine_pid,
    engineStarted: r.engine_started === 1,
  };
}

function uploadFromRow(row: UploadRow): PendingUpload {
  return { uuid: row.uuid, fields: JSON.parse(row.fields) as TaskFields, createdAt: row.created_at };
}

// The column list follows toRow, so that a new field cannot be forgotten in the SQL.
const COLUMNS = Object.keys(toRow({} as TaskRecord)) as (keyof TaskRow)[];

export class TaskStore {
  private readonly db: Database.Database;
  private readonly statements;

  constructor(file: string) {
    this.db = new Database(file);
    this.db.pragma('journal_mode = WAL');
    this.db.pragma('synchronous = NORMAL');
    this.db.pragma('busy_timeout = 5000');
    this.migrate();
    const db = this.db;
    this.statements = {
      insertTask: db.prepare<TaskRow>(
        `INSERT INTO tasks (${COLUMNS.join(', ')}) VALUES (${COLUMNS.map((c) => '@' + c).join(', ')})`,
      ),
      updateTask: db.prepare<TaskRow>(
        `UPDATE tasks SET ${COLUMNS.filter((c) => c !== 'uuid').map((c) => `${c} = @${c}`).join(', ')}
         WHERE uuid = @uuid`,
      ),
      getTask: db.prepare<[string], TaskRow>('SELECT * FROM tasks WHERE uuid = ?'),
      listTasks: db.prepare<[], TaskRow>('SELECT * FROM tasks ORDER BY seq'),
      queued: db.prepare<[number], TaskRow>('SELECT * FROM tasks WHERE status = ? ORDER BY queued_at, seq'),
      countByStatus: db.prepare<[number, number], { n: number }>(
        'SELECT count(*) AS n FROM tasks WHERE status IN (?, ?)',
      ),
      deleteTask: db.prepare<[string]>('DELETE FROM tasks WHERE uuid = ?'),
      insertUpload: db.prepare<UploadRow>('INSERT INTO uploads (uuid, fields, created_at) VALUES (@uuid, @fields, @created_at)'),
      getUpload: db.prepare<[string], UploadRow>('SELECT * FROM uploads WHERE uuid = ?'),
      listUploads: db.prepare<[], UploadRow>('SELECT * FROM uploads ORDER BY created_at'),
      deleteUpload: db.prepare<[string]>('DELETE FROM uploads WHERE uuid = ?'),
    };
  }

  private migrate(): void {
    const version = this.db.pragma('user_version', { simple: true }) as number;
    for (let v = version; v < MIGRATIONS.length; v++) {
      this.db.transaction(() => {
        this.db.exec(MIGRATIONS[v]);
        this.db.pragma(`user_version = ${v + 1}`);
      })();
    }
  }

  getTask(uuid: string): TaskRecord | undefined {
    const row = this.statements.getTask.get(uuid);
    return row && fromRow(row);
  }

  listTasks(): TaskRecord[] {
    return this.statements.listTasks.all().map(fromRow);
  }

  queuedTasks(): TaskRecord[] {
    return this.statements.queued.all(TaskStatus.QUEUED).map(fromRow);
  }

  /** Tasks waiting or running (NodeODM's taskQueueCount). */
  countPending(): number {
    return this.statements.countByStatus.get(TaskStatus.QUEUED, TaskStatus.RUNNING)!.n;
  }

  /** Merges `changes` into the stored task and returns the result; undefined when the task is gone. */
  updateTask(uuid: string, changes: Partial<Omit<TaskRecord, 'uuid'>>): TaskRecord | undefined {
    const current = this.getTask(uuid);
    if (!current) return undefined;
    const next = { ...current, ...changes };
    this.statements.updateTask.run(toRow(next));
    return next;
  }

  deleteTask(uuid: string): void {
    this.statements.deleteTask.run(uuid);
  }

  addUpload(upload: PendingUpload): void {
    this.statements.insertUpload.run({
      uuid: upload.uuid,
      fields: JSON.stringify(upload.fields),
      created_at: upload.createdAt,
    });
  }

  getUpload(uuid: string): PendingUpload | undefined {
    const row = this.statements.getUpload.get(uuid);
    return row && uploadFromRow(row);
  }

  listUploads(): PendingUpload[] {
    return this.statements.listUploads.all().map(uploadFromRow);
  }

  deleteUpload(uuid: string): void {
    this.statements.deleteUpload.run(uuid);
  }

  /** The upload becomes a task in one transaction: a crash leaves either the upload or the task. */
  commitUpload(task: TaskRecord): void {
    this.db.transaction(() => {
      this.statements.insertTask.run(toRow(task));
      this.statements.deleteUpload.run(task.uuid);
    })();
  }

  close(): void {
    this.db.close();
  }
}
