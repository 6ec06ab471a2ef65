// Where the node keeps things under its data folder. Only uuids the node itself checked or created reach here.
import path from 'node:path';

export class DataLayout {
  constructor(readonly root: string) {}

  get database(): string {
    return path.join(this.root, 'node.sqlite');
  }

  /** Task folders: each is the engine's project folder (images/, outputs, all.zip). */
  get tasksDir(): string {
    return path.join(this.root, 'tasks');
  }

  /** Files of uploads not yet committed. */
  get uploadsDir(): string {
    return path.join(this.root, 'uploads');
  }

  taskDir(uuid: string): string {
    return path.join(this.tasksDir, uuid);
  }

  /** The node's own files of a task, kept beside the engine's in a folder no default output path names. */
  nodeDir(uuid: string): string {
    return path.join(this.taskDir(uuid), '.node');
  }

  consoleFile(uuid: string): string {
    return path.join(this.nodeDir(uuid), 'console.txt');
  }

  optionsFile(uuid: string): string {
    return path.join(this.nodeDir(uuid), 'options.json');
  }

  archive(uuid: string): string {
    return path.join(this.taskDir(uuid), 'all.zip');
  }

  uploadDir(uuid: string): string {
    return path.join(this.uploadsDir, uuid);
  }

  /** Where a commit assembles a task folder before renaming it into tasksDir. */
  assemblyDir(uuid: string): string {
    return path.join(this.uploadsDir, `${uuid}.assembly`);
  }
}
