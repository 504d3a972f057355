// Shell completion for platformctl: bash and zsh scripts generated from the command tree, resource names asked live.
import type { Command } from "commander";
import { UsageError, type CommandModule } from "./program.js";

export type Shell = "bash" | "zsh";

/** Verbs whose first operand is a resource type and later operands are object names. */
const RESOURCE_VERBS = ["get", "describe", "delete", "patch"];

interface Node {
  readonly path: string;
  readonly subcommands: string[];
  readonly flags: string[];
  readonly valued: string[];
}

function nodes(cmd: Command, path = ""): Node[] {
  const flags = cmd.options.flatMap((o) => [o.long, o.short].filter((f): f is string => f !== undefined));
  const valued = cmd.options.filter((o) => o.required || o.optional).flatMap((o) => [o.long, o.short].filter((f): f is string => f !== undefined));
  const visible = cmd.commands.filter((c) => !(c as unknown as { _hidden?: boolean })._hidden);
  const here: Node = { path, subcommands: visible.map((c) => c.name()), flags: [...new Set(flags)].sort(), valued: [...new Set(valued)].sort() };
  return [here, ...visible.flatMap((c) => nodes(c, path ? `${path} ${c.name()}` : c.name()))];
}

const quote = (words: readonly string[]) => words.join(" ").replace(/"/g, '\\"');

/** The completion script for `shell`, built from `program`'s commands and options. */
export function completionScript(program: Command, shell: Shell): string {
  const name = program.name();
  const fn = `_${name.replace(/[^A-Za-z0-9]/g, "_")}`;
  const all = nodes(program);
  const root = all[0]!;
  const cases = (pick: (n: Node) => string[]) => all.map((n) => `    "${n.path}") echo "${quote(pick(n))}" ;;`).join("\n");
  const bash = `${fn}_subcommands() {
  case "$1" in
${cases((n) => n.subcommands)}
  esac
}

${fn}_flags() {
  case "$1" in
${cases((n) => n.flags)}
  esac
}

${fn}_valued() {
  case " $(${fn}_valued_list "$1") " in
    *" $2 "*) return 0 ;;
  esac
  return 1
}

${fn}_valued_list() {
  case "$1" in
${cases((n) => n.valued)}
  esac
  echo "${quote(root.valued)}"
}

${fn}() {
  local cur="\${COMP_WORDS[COMP_CWORD]}" path="" word i
  local -a operands=()
  for ((i = 1; i < COMP_CWORD; i++)); do
    word="\${COMP_WORDS[i]}"
    if [[ "$word" == -* ]]; then
      [[ "$word" != *=* ]] && ${fn}_valued "$path" "$word" && ((i++))
      continue
    fi
    if [[ " $(${fn}_subcommands "$path") " == *" $word "* ]]; then
      path="\${path:+$path }$word"
    else
      operands+=("$word")
    fi
  done
  if [[ "$cur" == -* ]]; then
    COMPREPLY=($(compgen -W "$(${fn}_flags "$path") $(${fn}_flags "")" -- "$cur"))
    return
  fi
  local subs="$(${fn}_subcommands "$path")"
  if [[ -n "$subs" ]]; then
    COMPREPLY=($(compgen -W "$subs" -- "$cur"))
    return
  fi
  case "$path" in
    ${RESOURCE_VERBS.join("|")})
      if ((\${#operands[@]} == 0)); then
        COMPREPLY=($(compgen -W "$(${name} api-resources -o name --request-timeout 5s 2>/dev/null)" -- "$cur"))
      else
        COMPREPLY=($(compgen -W "$(${name} get "\${operands[0]}" -o name --request-timeout 5s 2>/dev/null | sed 's|.*/||')" -- "$cur"))
      fi
      ;;
    "certificate approve"|"certificate deny")
      COMPREPLY=($(compgen -W "$(${name} get csr -o name --request-timeout 5s 2>/dev/null | sed 's|.*/||')" -- "$cur"))
      ;;
  esac
}
`;
  if (shell === "bash") return `# bash completion for ${name}; load with: source <(${name} completion bash)\n${bash}complete -o default -F ${fn} ${name}\n`;
  return `#compdef ${name}\n# zsh completion for ${name}; load with: source <(${name} completion zsh)\nautoload -U +X bashcompinit && bashcompinit\n${bash}complete -o default -F ${fn} ${name}\n`;
}

export const completionVerb: CommandModule = (program: Command) => {
  program
    .command("completion")
    .description("print a shell completion script (bash or zsh)")
    .argument("<shell>", "bash or zsh")
    .addHelpText("after", "\nExamples:\n  source <(platformctl completion bash)\n  platformctl completion zsh > \"${fpath[1]}/_platformctl\"\n")
    .action((shell: string) => {
      if (shell !== "bash" && shell !== "zsh") throw new UsageError(`unsupported shell type ${JSON.stringify(shell)}: use bash or zsh`);
      process.stdout.write(completionScript(program, shell));
    });
};
