# tr_add_test(NAME SOURCES... [LABELS l...] [ARGS a...]): one test program
# linked against the library and its internal headers. Tests find the repo
# through TR_SOURCE_DIR and the recordings and vocabularies they need through
# TR_SHARED_DIR: tests/data/shared, a committed copy of the few files of the
# project's read-only ../shared folder that tests read (a user's clone has no
# ../shared, so tests never depend on it).
# Label a test `nosan` to keep it out of the sanitizer run (too slow there).
function(tr_add_test name)
    cmake_parse_arguments(ARG "" "" "SOURCES;LABELS;ARGS" ${ARGN})
    add_executable(${name} ${ARG_SOURCES} ${ARG_UNPARSED_ARGUMENTS})
    target_link_libraries(${name} PRIVATE transcribe_internal)
    target_compile_definitions(${name} PRIVATE
        TR_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
        TR_SHARED_DIR="${PROJECT_SOURCE_DIR}/tests/data/shared"
        TR_BINARY_DIR="${PROJECT_BINARY_DIR}")
    target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR}/tests)
    add_test(NAME ${name} COMMAND ${name} ${ARG_ARGS} WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
    if(ARG_LABELS)
        set_tests_properties(${name} PROPERTIES LABELS "${ARG_LABELS}")
    endif()
endfunction()
