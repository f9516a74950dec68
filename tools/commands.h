/* The subcommands of the ldpb command. Each parses its own arguments (argv[0] is the
 * subcommand name), prints to stdout/stderr, and returns the process exit status. */
#ifndef LDPB_TOOLS_COMMANDS_H
#define LDPB_TOOLS_COMMANDS_H

int cmd_privatize(int argc, char **argv);
int cmd_audit(int argc, char **argv);
int cmd_keygen(int argc, char **argv);
int cmd_sim(int argc, char **argv);

#endif
