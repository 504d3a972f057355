// Shell completion for platform-ca and platformctl: bash, zsh and fish scripts generated from the command tree;
// platformctl's resource types and object names come from the server through a small cache file the script reads.
import { Command } from "commander";
import { addClientFlags } from "../client/index.js";
import { UsageError, type CommandModule } from "./program.js";

export const SHELLS = ["bash", "zsh", "fish"] as const;
export type Shell = (typeof SHELLS)[number];

/** Verbs whose first operand is a resource type and later operands are object names. */
const RESOURCE_VERBS = ["get", "describe", "delete", "patch"];
const CSR_VERBS = ["certificate approve", "certificate deny"];

/**
 * The flags that choose the server, the user and the namespace (and where the cache lives): given on the line being
 * completed, they are passed on when names are asked for, and they key the cached names.
 */
const CONNECTION_FLAGS = [
  ...addClientFlags(new Command()).options.flatMap((o) => [o.long, o.short].filter((f): f is string => f !== undefined)),
  "--kubeconfig",
  "--cache-dir",
  "--group-suffix",
  "--platformrc",
];

interface Node {
  readonly path: string;
  readonly subcommands: string[];
  readonly flags: string[];
  readonly valued: string[];
}

const isHidden = (c: Command) => (c as unknown as { _hidden?: boolean })._hidden === true;

function nodes(cmd: Command, path = ""): Node[] {
  const flags = cmd.options.flatMap((o) => [o.long, o.short].filter((f): f is string => f !== undefined));
  const valued = cmd.options.filter((o) => o.required || o.optional).flatMap((o) => [o.long, o.short].filter((f): f is string => f !== undefined));
  const visible = cmd.commands.filter((c) => !isHidden(c));
  const here: Node = { path, subcommands: visible.map((c) => c.name()), flags: [...new Set(flags)].sort(), valued: [...new Set(valued)].sort() };
  return [here, ...visible.flatMap((c) => nodes(c, path ? `${path} ${c.name()}` : c.name()))];
}

const quote = (words: readonly string[]) => words.join(" ").replace(/"/g, '\\"');

/** Completes object names: with `dynamic`, the script asks `<name> __complete` (platformctl). */
interface ScriptOptions {
  readonly dynamic: boolean;
}

function bashScript(program: Command, o: ScriptOptions): string {
  const name = program.name();
  const fn = `_${name.replace(/[^A-Za-z0-9]/g, "_")}`;
  const all = nodes(program);
  const root = all[0]!;
  const cases = (pick: (n: Node) => string[]) => all.map((n) => `    "${n.path}") echo "${quote(pick(n))}" ;;`).join("\n");
  // Names: the cache file (first line: when it expires, in epoch seconds) answers without starting node; when it is
  // missing or stale, `__complete` asks the server and writes it.
  const names = `
${fn}_names() {
  local dir="$HOME/.platform/cache" i key file expires line hit=""
  for ((i = 0; i < \${#conn[@]}; i++)); do
    case "\${conn[i]}" in
      --cache-dir) dir="\${conn[i+1]}" ;;
      --cache-dir=*) dir="\${conn[i]#--cache-dir=}" ;;
    esac
  done
  key="$(printf '%s\\n' "$1" "$2" "\${conn[@]}" "$PLATFORMCONFIG" "$KUBECONFIG" "$PWD" | cksum)"
  file="$dir/completion/$1-\${key%% *}"
  if [[ -r "$file" ]]; then
    {
      IFS= read -r expires
      if ((expires > \${EPOCHSECONDS:-$(date +%s)})); then
        hit=1
        while IFS= read -r line; do echo "$line"; done
      fi
    } < "$file"
  fi
  [[ -n "$hit" ]] || ${name} "\${conn[@]}" __complete "$1" "$2" --cache-file "$file" 2>/dev/null
}

${fn}_connection() {
  case " ${quote(CONNECTION_FLAGS)} " in
    *" $1 "*) return 0 ;;
  esac
  return 1
}
`;
  const dynamic = `
  case "$path" in
    ${RESOURCE_VERBS.join("|")})
      if ((\${#operands[@]} == 0)); then
        COMPREPLY=($(compgen -W "$(${fn}_names resources "")" -- "$cur"))
      else
        COMPREPLY=($(compgen -W "$(${fn}_names names "\${operands[0]}")" -- "$cur"))
      fi
      ;;
    ${CSR_VERBS.map((v) => `"${v}"`).join("|")})
      COMPREPLY=($(compgen -W "$(${fn}_names names csr)" -- "$cur"))
      ;;
  esac`;
  return `${fn}_subcommands() {
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
${o.dynamic ? names : ""}
${fn}() {
  [[ -n "$ZSH_VERSION" ]] && setopt localoptions ksharrays
  local cur="\${COMP_WORDS[COMP_CWORD]}" path="" word i
  local -a operands=() conn=()
  for ((i = 1; i < COMP_CWORD; i++)); do
    word="\${COMP_WORDS[i]}"
    if [[ "$word" == -* ]]; then
      if [[ "$word" != *=* ]] && ${fn}_valued "$path" "$word"; then
        ${o.dynamic ? `${fn}_connection "$word" && conn+=("$word" "\${COMP_WORDS[i+1]}")` : ":"}
        ((i++))
      else
        ${o.dynamic ? `${fn}_connection "\${word%%=*}" && conn+=("$word")` : ":"}
      fi
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
  fi${o.dynamic ? dynamic : ""}
}
`;
}

/** fish: one function computes the command path of the line, another answers with subcommands, flags or names. */
function fishScript(program: Command, o: ScriptOptions): string {
  const name = program.name();
  const fn = `__${name.replace(/[^A-Za-z0-9]/g, "_")}`;
  const all = nodes(program);
  const cases = (pick: (n: Node) => string[]) => all.map((n) => `        case "${n.path}"\n            printf '%s\\n' ${pick(n).map((w) => `'${w}'`).join(" ")}`).join("\n");
  const names = `
function ${fn}_names
    set -l dir $HOME/.platform/cache
    set -l conn $${fn}_conn
    for i in (seq (count $conn))
        switch $conn[$i]
            case --cache-dir
                set dir $conn[(math $i + 1)]
            case '--cache-dir=*'
                set dir (string replace -- --cache-dir= '' $conn[$i])
        end
    end
    set -l key (printf '%s\\n' $argv[1] $argv[2] $conn "$PLATFORMCONFIG" "$KUBECONFIG" $PWD | cksum | string split -f1 ' ')
    set -l file $dir/completion/$argv[1]-$key
    if test -r $file
        set -l lines (cat $file)
        if test (count $lines) -ge 1; and test $lines[1] -gt (date +%s)
            printf '%s\\n' $lines[2..-1]
            return
        end
    end
    ${name} $conn __complete $argv[1] "$argv[2]" --cache-file $file 2>/dev/null
end
`;
  return `# fish completion for ${name}; load with: ${name} completion fish | source
function ${fn}_subcommands
    switch "$argv[1]"
${cases((n) => n.subcommands)}
    end
end

function ${fn}_flags
    switch "$argv[1]"
${cases((n) => n.flags)}
    end
end

function ${fn}_valued
    switch "$argv[1]"
${cases((n) => n.valued)}
    end
    ${fn}_valued_list_root
end

function ${fn}_valued_list_root
    printf '%s\\n' ${all[0]!.valued.map((w) => `'${w}'`).join(" ")}
end
${o.dynamic ? names : ""}
function ${fn}_complete
    set -l words (commandline -opc)
    set -l cur (commandline -ct)
    set -l path ""
    set -l operands
    set -g ${fn}_conn
    set -l skip 0
    for i in (seq 2 (count $words))
        set -l word $words[$i]
        if test $skip = 1
            set skip 0
            continue
        end
        if string match -q -- '-*' $word
            if not string match -q -- '*=*' $word; and contains -- $word (${fn}_valued "$path")
                set skip 1
                ${o.dynamic ? `contains -- $word ${CONNECTION_FLAGS.join(" ")}; and set -a ${fn}_conn $word $words[(math $i + 1)]` : ""}
            else
                ${o.dynamic ? `contains -- (string split -f1 = -- $word) ${CONNECTION_FLAGS.join(" ")}; and set -a ${fn}_conn $word` : ""}
            end
            continue
        end
        if contains -- $word (${fn}_subcommands "$path")
            set path (string trim -- "$path $word")
        else
            set -a operands $word
        end
    end
    if string match -q -- '-*' $cur
        ${fn}_flags "$path"
        ${fn}_flags ""
        return
    end
    set -l subs (${fn}_subcommands "$path")
    if test (count $subs) -gt 0
        printf '%s\\n' $subs
        return
    end
${
  o.dynamic
    ? `    switch "$path"
        case ${RESOURCE_VERBS.join(" ")}
            if test (count $operands) -eq 0
                ${fn}_names resources ""
            else
                ${fn}_names names $operands[1]
            end
        case ${CSR_VERBS.map((v) => `"${v}"`).join(" ")}
            ${fn}_names names csr
    end
`
    : ""
}end

complete -c ${name} -f -a '(${fn}_complete)'
`;
}

/** The completion script for `shell`, built from `program`'s commands and options. */
export function completionScript(program: Command, shell: Shell, o: ScriptOptions = { dynamic: false }): string {
  const name = program.name();
  const fn = `_${name.replace(/[^A-Za-z0-9]/g, "_")}`;
  if (shell === "fish") return fishScript(program, o);
  const bash = bashScript(program, o);
  if (shell === "bash") return `# bash completion for ${name}; load with: source <(${name} completion bash)\n${bash}complete -o default -F ${fn} ${name}\n`;
  return `#compdef ${name}\n# zsh completion for ${name}; load with: source <(${name} completion zsh)\nautoload -U +X bashcompinit && bashcompinit\n${bash}complete -o default -F ${fn} ${name}\n`;
}

/** The `completion bash|zsh|fish` command of a CLI; `dynamic` adds object names from the server (platformctl). */
export function completionCommand(o: ScriptOptions): CommandModule {
  return (program: Command) => {
    const name = program.name();
    program
      .command("completion")
      .description("print a shell completion script (bash, zsh or fish)")
      .argument("<shell>", SHELLS.join(", "))
      .addHelpText(
        "after",
        `\nExamples:\n  source <(${name} completion bash)\n  ${name} completion zsh > "\${fpath[1]}/_${name}"\n  ${name} completion fish > ~/.config/fish/completions/${name}.fish\n`,
      )
      .action((shell: string) => {
        if (!(SHELLS as readonly string[]).includes(shell)) throw new UsageError(`unsupported shell type ${JSON.stringify(shell)}: use ${SHELLS.join(", ")}`);
        process.stdout.write(completionScript(program, shell as Shell, o));
      });
  };
}

export const completionVerb: CommandModule = completionCommand({ dynamic: true });
