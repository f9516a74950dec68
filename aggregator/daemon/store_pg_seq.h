/* What store_pg.c shares with store_pg_seq.c (the PostgreSQL side of store_seq.h). */
#ifndef LDPB_AGG_STORE_PG_SEQ_H
#define LDPB_AGG_STORE_PG_SEQ_H

#include <libpq-fe.h>

#include "store_be.h"

/* The open connection of a PostgreSQL store. */
PGconn *agg_pg_conn(agg_store *s);

/* Inside the open's transaction, after the schema is settled and before the statements are
 * prepared: the columns of sequenced experiments (experiments.seq_epoch, reports.observed, seq,
 * context) and the index of unobserved rows, added where missing. LDPB_EIO. */
ldpb_err agg_pg_seq_schema(agg_store *s);

#endif
