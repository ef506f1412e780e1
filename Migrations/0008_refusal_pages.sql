-- Pages of a channel's refusals (`GET /channels/{channel}/refusals`, RefusalStore.refusals(of:breakID:after:limit:))
-- are read in the order recorded with the row id as cursor: this index finds a page without reading the refusals
-- before it.
CREATE INDEX cueline_refusals_channel_id ON cueline_refusals (channel, id);
