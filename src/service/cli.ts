// The service's subcommands: `aeromap serve` and `aeromap user create|set-password`.
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import type { Kysely } from 'kysely';
import { ConfigError, type ServiceConfig, loadConfig } from './config.ts';
import type { Database } from '../db/schema.ts';
import type { Service } from './app.ts';

/** A mistake in a command's arguments or in what it asks for: reported in one line, exit status 1. */
class CommandError extends Error {}

function configOrExit(): ServiceConfig {
  try {
    return loadConfig();
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    process.stderr.write(`aeromap: ${error.message}\n`);
    process.exit(2);
  }
}

// The modules behind each command load when it runs, so that `aeromap --help` and the other parts'
// commands do not pay for the whole service.
async function serve(): Promise<void> {
  const config = configOrExit();
  const { buildService } = await import('./app.ts');
  const service = await buildService(config).catch((error: Error) => {
    // Most often the database cannot be reached or opened: say so in one line.
    process.stderr.write(`aeromap: cannot start the service: ${error.message}\n`);
    process.exit(1);
  });
  const { firstAdmin } = service;
  if (firstAdmin?.generatedPassword) {
    process.stdout.write(
      `\nCreated the first admin account.\n  username: ${firstAdmin.username}\n  password: ${firstAdmin.generatedPassword}\n` +
        'This password is shown only once; change it with `aeromap user set-password`.\n\n',
    );
  } else if (firstAdmin) {
    process.stdout.write(`Created the first admin account "${firstAdmin.username}" from AEROMAP_ADMIN_* settings.\n`);
  }
  const embedded = config.embeddedNode ? await startEmbedded(config.embeddedNode, service) : undefined;
  const url = await service.listen();
  process.stdout.write(`Aeromap is listening on ${url} (API docs: ${url}/api/docs)\n`);
  const stop = async () => {
    await service.close();
    await embedded?.close();
    process.exit(0);
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

async function startEmbedded(settings: NonNullable<ServiceConfig['embeddedNode']>, service: Service) {
  const { startEmbeddedNode } = await import('./embedded-node.ts');
  const log = (message: string) => service.app.log.info(`embedded node: ${message}`);
  const started = await startEmbeddedNode(settings, service.db, service.refresher, log).catch(async (error: Error) => {
    process.stderr.write(`aeromap: cannot start the embedded processing node: ${error.message}\n`);
    await service.close();
    process.exit(1);
  });
  process.stdout.write(`Embedded processing node on ${started.node.url} (EMBEDDED_NODE=false to run without it)\n`);
  return started.node;
}

interface PasswordOptions {
  password?: string;
  passwordStdin?: boolean;
}

/** The password from --password or standard input, or a generated one that is printed. */
function choosePassword(options: PasswordOptions): { password: string; generated: boolean } {
  if (options.password) return { password: options.password, generated: false };
  if (options.passwordStdin) {
    const password = readFileSync(0, 'utf8').split(/\r?\n/)[0];
    if (!password) throw new CommandError('no password on standard input');
    return { password, generated: false };
  }
  return { password: randomBytes(12).toString('base64url'), generated: true };
}

/** Runs a user-management command against the configured database, migrated first. */
async function withDatabase(work: (db: Kysely<Database>, config: ServiceConfig) => Promise<void>) {
  const config = configOrExit();
  const [{ openDatabase }, { migrateToLatest }] = await Promise.all([import('../db/connect.ts'), import('../db/migrations.ts')]);
  const { db } = openDatabase(config.databaseUrl, config.dataDir);
  try {
    await migrateToLatest(db);
    await work(db, config);
  } catch (error) {
    if (!(error instanceof CommandError)) throw error;
    process.stderr.write(`aeromap: ${error.message}\n`);
    process.exitCode = 1;
  } finally {
    await db.destroy();
  }
}

function reportPassword(username: string, chosen: { password: string; generated: boolean }): void {
  if (chosen.generated) process.stdout.write(`password for ${username}: ${chosen.password}\n`);
}

export function registerServiceCommands(program: Command): void {
  program
    .command('serve')
    .description('start the service in the foreground (configuration: see README, "Configuration")')
    .action(serve);

  const user = program.command('user').description('manage user accounts');
  user
    .command('create <username>')
    .description('create a user; without --password a password is generated and printed')
    .option('--password <password>', 'the password')
    .option('--password-stdin', 'read the password from the first line of standard input')
    .option('--email <email>', 'e-mail address', '')
    .option('--first-name <name>', 'first name', '')
    .option('--last-name <name>', 'last name', '')
    .option('--staff', 'may use the admin API and manage processing nodes')
    .option('--superuser', 'holds every permission (implies --staff)')
    .action(async (username: string, options: PasswordOptions & Record<string, string | boolean | undefined>) => {
      await withDatabase(async (db, config) => {
        const [{ flag, now }, { findUserByUsername, insertUser }, { hashPassword }, { USERNAME_PATTERN }] = await Promise.all([
          import('../db/schema.ts'),
          import('../db/users.ts'),
          import('./passwords.ts'),
          import('./schemas.ts'),
        ]);
        if (!new RegExp(USERNAME_PATTERN).test(username) || username.length > 150) {
          throw new CommandError('a username has up to 150 letters, digits and @ . + - _');
        }
        if (await findUserByUsername(db, username)) throw new CommandError(`user "${username}" already exists`);
        const chosen = choosePassword(options);
        await insertUser(db, {
          username,
          password: await hashPassword(chosen.password, config.passwordIterations),
          email: String(options.email),
          first_name: String(options.firstName),
          last_name: String(options.lastName),
          is_superuser: flag(Boolean(options.superuser)),
          is_staff: flag(Boolean(options.staff || options.superuser)),
          is_active: 1,
          date_joined: now(),
        });
        process.stdout.write(`created user ${username}\n`);
        reportPassword(username, chosen);
      });
    });
  user
    .command('set-password <username>')
    .description("set a user's password; without --password one is generated and printed")
    .option('--password <password>', 'the new password')
    .option('--password-stdin', 'read the password from the first line of standard input')
    .action(async (username: string, options: PasswordOptions) => {
      await withDatabase(async (db, config) => {
        const [{ findUserByUsername, updateUser }, { hashPassword }] = await Promise.all([
          import('../db/users.ts'),
          import('./passwords.ts'),
        ]);
        const existing = await findUserByUsername(db, username);
        if (!existing) throw new CommandError(`no user "${username}"`);
        const chosen = choosePassword(options);
        await updateUser(db, existing.id, { password: await hashPassword(chosen.password, config.passwordIterations) });
        process.stdout.write(`password of ${username} changed\n`);
        reportPassword(username, chosen);
      });
    });
}
