/* Umbrella header: the generic API plus every shipped family extension. */
#ifndef TRANSCRIBE_EXTENSIONS_H
#define TRANSCRIBE_EXTENSIONS_H

#include "transcribe.h"
#include "transcribe/moonshine_streaming.h"
#include "transcribe/parakeet.h"
#include "transcribe/sortformer.h"
#include "transcribe/voxtral_realtime.h"
#include "transcribe/whisper.h"

#endif /* TRANSCRIBE_EXTENSIONS_H */
