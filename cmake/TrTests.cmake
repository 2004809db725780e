# tr_add_test(NAME SOURCES... [LABELS l...] [ARGS a...]): one test program
# linked against the library and its internal headers. Tests find the repo
# through TR_SOURCE_DIR and the recordings and vocabularies they need through
# TR_CORPUS_DIR: tests/data/corpus, a committed copy of the few files of the
# project's read-only ../shared folder that tests read (a user's clone has no
# ../shared, so tests never depend on it).
# Label a test `nosan` to keep it out of the sanitizer run (too slow there).
# When cross-compiling, ctest runs each test under CMAKE_CROSSCOMPILING_EMULATOR,
# but a test that starts another of our programs (ARGS $<TARGET_FILE:tool>)
# gets a wrapper script that runs the tool under the emulator too.
function(tr_emulated_tool tool out_var)
    set(wrapper ${PROJECT_BINARY_DIR}/emu/${tool})
    get_property(done GLOBAL PROPERTY TR_EMU_WRAPPER_${tool})
    if(NOT done)
        set_property(GLOBAL PROPERTY TR_EMU_WRAPPER_${tool} ON)
        list(JOIN CMAKE_CROSSCOMPILING_EMULATOR " " emu)
        file(GENERATE OUTPUT ${wrapper}
             CONTENT "#!/bin/sh\nexec ${emu} $<TARGET_FILE:${tool}> \"$@\"\n"
             FILE_PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE
                              WORLD_READ WORLD_EXECUTE)
    endif()
    set(${out_var} ${wrapper} PARENT_SCOPE)
endfunction()

function(tr_add_test name)
    cmake_parse_arguments(ARG "" "" "SOURCES;LABELS;ARGS" ${ARGN})
    if(CMAKE_CROSSCOMPILING AND CMAKE_CROSSCOMPILING_EMULATOR)
        set(args "")
        foreach(a ${ARG_ARGS})
            if(a MATCHES "^\\$<TARGET_FILE:([^>]+)>$")
                tr_emulated_tool(${CMAKE_MATCH_1} a)
            endif()
            list(APPEND args "${a}")
        endforeach()
        set(ARG_ARGS ${args})
    endif()
    add_executable(${name} ${ARG_SOURCES} ${ARG_UNPARSED_ARGUMENTS})
    target_link_libraries(${name} PRIVATE transcribe_internal)
    target_compile_definitions(${name} PRIVATE
        TR_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
        TR_CORPUS_DIR="${PROJECT_SOURCE_DIR}/tests/data/corpus"
        TR_BINARY_DIR="${PROJECT_BINARY_DIR}")
    target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR}/tests)
    add_test(NAME ${name} COMMAND ${name} ${ARG_ARGS} WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
    if(ARG_LABELS)
        set_tests_properties(${name} PROPERTIES LABELS "${ARG_LABELS}")
    endif()
endfunction()
