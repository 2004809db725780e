# tr_add_module(NAME [RECURSE]): an OBJECT library tr_<NAME> from the .c
# files of the current source folder. Files ending in _avx2.c / _avx512.c are
# compiled for those instruction sets (callers dispatch at run time).
function(tr_add_module name)
    cmake_parse_arguments(ARG "RECURSE" "" "" ${ARGN})
    if(ARG_RECURSE)
        file(GLOB_RECURSE srcs CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*.c)
    else()
        file(GLOB srcs CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*.c)
    endif()
    if(NOT srcs)
        return() # module not written yet
    endif()
    add_library(tr_${name} OBJECT ${srcs})
    # Only what the public headers mark TRANSCRIBE_API leaves the shared
    # library; everything internal stays hidden (scripts/check-exports).
    set_target_properties(tr_${name} PROPERTIES C_VISIBILITY_PRESET hidden)
    target_include_directories(tr_${name} PUBLIC ${PROJECT_SOURCE_DIR}/include ${PROJECT_SOURCE_DIR}/src)
    target_compile_definitions(tr_${name} PRIVATE TRANSCRIBE_BUILD)
    foreach(src ${srcs})
        if(src MATCHES "_avx2\\.c$")
            set_source_files_properties(${src} PROPERTIES COMPILE_OPTIONS "-mavx2;-mfma;-mf16c")
        elseif(src MATCHES "_avx512\\.c$")
            set_source_files_properties(${src} PROPERTIES COMPILE_OPTIONS
                "-mavx512f;-mavx512bw;-mavx512vl;-mavx512dq;-mavx512vnni;-mavx2;-mfma;-mf16c")
        endif()
    endforeach()
endfunction()
