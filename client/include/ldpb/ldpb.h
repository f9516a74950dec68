/* Umbrella header: everything an app embedding ldpb needs. */
#ifndef LDPB_LDPB_H
#define LDPB_LDPB_H

#include "ldpb/err.h"
#include "ldpb/rng.h"
#include "ldpb/mech.h"
#include "ldpb/ledger.h"
#include "ldpb/client.h"

#endif
