// The single entry point of Aeromap: `aeromap serve | node | process | user ...`.
// Each part registers its own subcommands so that this file stays a table of contents.
import { Command } from 'commander';
import { registerNodeCommand } from './node/index.ts';
import { registerProcessCommand } from './process/command.ts';
import { registerServiceCommands } from './service/cli.ts';

const program = new Command('aeromap').description('Aeromap: drone photographs to maps').showHelpAfterError();
registerServiceCommands(program);
registerNodeCommand(program);
registerProcessCommand(program);

await program.parseAsync(process.argv);
