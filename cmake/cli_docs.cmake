# Generates the bash completion and the man page from the built binary, so neither can drift
# from the commands: `retrace completion bash`, and help2man over `retrace --help` with every
# command's help (`retrace help --all`) as its COMMANDS section and the guides (`retrace help
# topics`) as its GUIDES section.
# Run at build time:  cmake -DRETRACE=bin -DBASH_COMPLETION=f [-DHELP2MAN=exe -DMAN_PAGE=f] -P cli_docs.cmake
function(run_retrace output)
  execute_process(COMMAND ${RETRACE} ${ARGN} OUTPUT_VARIABLE text RESULT_VARIABLE failed)
  if(failed)
    message(FATAL_ERROR "`retrace ${ARGN}` failed: ${failed}")
  endif()
  set(${output} "${text}" PARENT_SCOPE)
endfunction()

run_retrace(completion completion bash)
file(WRITE "${BASH_COMPLETION}" "${completion}")

if(NOT HELP2MAN OR NOT MAN_PAGE)
  return()
endif()
# Every command's help, after the top-level part (help2man renders that from --help), as
# preformatted roff: backslashes escaped, no line starting with a control character.
run_retrace(all help --all)
string(FIND "${all}" "\nCapture:\n" commands_start)
if(commands_start LESS 0)
  message(FATAL_ERROR "`retrace help --all` has no Capture: heading; update cmake/cli_docs.cmake")
endif()
string(SUBSTRING "${all}" ${commands_start} -1 commands)
string(REPLACE "\\" "\\e" commands "${commands}")
string(REGEX REPLACE "\n([.'])" "\n\\\\&\\1" commands "${commands}")
get_filename_component(man_dir "${MAN_PAGE}" DIRECTORY)
# The task guides (`retrace help topics`) as a section of their own, after the commands.
run_retrace(topics help topics)
string(REPLACE "\\" "\\e" topics "${topics}")
string(REGEX REPLACE "\n([.'])" "\n\\\\&\\1" topics "${topics}")
file(WRITE "${man_dir}/commands.h2m"
     "[COMMANDS]\n.nf\n${commands}\n.fi\n[GUIDES]\n.nf\n${topics}\n.fi\n")
execute_process(
  COMMAND ${HELP2MAN} --no-info --section=1 --include=${man_dir}/commands.h2m
          "--name=record, replay and diff LLM inference traffic" --output=${MAN_PAGE} ${RETRACE}
  RESULT_VARIABLE failed)
if(failed)
  message(FATAL_ERROR "help2man failed: ${failed}")
endif()
# Installed gzipped, as Debian's policy (and man-db) want it; -n: no name or time in the header,
# so the same page gives the same bytes.
execute_process(COMMAND gzip -9 -n -c ${MAN_PAGE} OUTPUT_FILE ${MAN_PAGE}.gz RESULT_VARIABLE failed)
if(failed)
  message(FATAL_ERROR "gzip of the man page failed: ${failed}")
endif()
