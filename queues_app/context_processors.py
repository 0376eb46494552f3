from queues_app.roles import can_act


def roles(request):
    user = getattr(request, "user", None)
    return {"can_act": bool(user and can_act(user))}
