"""What calls, agents and routing share: the call-centre table's key layout (`keys`) and the
transaction actions every change of it is built from (`table`), the front door
(`CallCenter`) and the table's invariants."""
